# format/: the reader's read-ahead thread changes nothing but speed.
reel_unit_test(test_readahead SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_readahead.c LIBS reelformat)
