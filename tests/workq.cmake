# replay/: the JSON worker's queue and the pcapng writer thread's buffers.
reel_unit_test(test_workq SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_workq.c LIBS reelreplay_internal)
