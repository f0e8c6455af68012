# replay/ pipeline and reelplay: unit and end-to-end tests on synthetic event
# streams, and the pipeline fuzz target (corpus in tests/fuzz/corpus/pipeline).
reel_unit_test(test_replay SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_replay.c LIBS reelreplay)
if(TARGET reelplay)
	add_dependencies(test_replay reelplay)
endif()
reel_fuzz_target(pipeline LIBS reelreplay)
