# replay/ pipeline and reelplay: unit and end-to-end tests on synthetic event
# streams, and the pipeline fuzz target (corpus in tests/fuzz/corpus/pipeline).
# white-box: reassembly, packet builder, event decoding
# One executable per concept (decode, pipeline, ends, reelplay); the helpers
# of test_replay_common.c built once and shared.
add_library(reel_test_replay_common STATIC ${CMAKE_CURRENT_SOURCE_DIR}/test_replay_common.c)
target_link_libraries(reel_test_replay_common PUBLIC reel_cmocka reelreplay_internal)
foreach(t decode pipeline ends reelplay malformed)
	reel_unit_test(test_replay_${t} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_replay_${t}.c
		LIBS reel_test_replay_common)
endforeach()
# --replay-to against a python target answering 1 GiB: peak RSS bounded
reel_unit_test(test_replayto_memory SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_replayto_memory.c
	LIBS reel_test_replay_common)
if(TARGET reelplay)
	add_dependencies(test_replay_reelplay reelplay)
	add_dependencies(test_replayto_memory reelplay)
endif()
if(TARGET reeltool) # its exit statuses are compared with reelplay's
	add_dependencies(test_replay_reelplay reeltool)
endif()
reel_fuzz_target(pipeline LIBS reelreplay)

# reelcap --print live == reelplay --print on the file (root + BPF; 77 = skipped).
if(TARGET reelcap AND TARGET reelplay)
	add_test(NAME replay_live_print
		COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/replay_live_print.sh
			$<TARGET_FILE:reelcap> $<TARGET_FILE:reelplay>)
	set_tests_properties(replay_live_print PROPERTIES SKIP_RETURN_CODE 77
		LABELS "integration" TIMEOUT 120)
endif()

# reelcap --print shows a transaction within 1 s of its response while the
# traced command still runs (the drain ticks the pipeline after every sweep).
find_package(Python3 COMPONENTS Interpreter)
if(TARGET reelcap AND Python3_Interpreter_FOUND)
	add_test(NAME live_print_latency
		COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/live_print_latency.py
			$<TARGET_FILE:reelcap>)
	set_tests_properties(live_print_latency PROPERTIES SKIP_RETURN_CODE 77
		LABELS "integration;root" TIMEOUT 120)
endif()

# Two captures in which one CPU's records reached the file seconds late
# (tests/data/late/): merged exactly by the footer index, every transaction
# paired, no hole; the same cut before its footer warns with the counts.
if(TARGET reelplay AND TARGET reeltool)
	add_test(NAME replay_late_records
		COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/replay_late_records.sh
			$<TARGET_FILE:reelplay> $<TARGET_FILE:reeltool>
			${CMAKE_CURRENT_SOURCE_DIR}/data/late ${CMAKE_CURRENT_BINARY_DIR}/late_records)
	set_tests_properties(replay_late_records PROPERTIES LABELS "traces" TIMEOUT 120)
endif()
