# format/: unit tests, reader fuzz target, data generator.
# white-box: format_internal.h (record coding, CRC, header frames)
reel_unit_test(test_format SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_format.c LIBS reelformat_internal)
reel_fuzz_target(reader LIBS reelformat_internal)

# Writes the crafted files of tests/data/ (built, never run by CTest):
#   gen_format_data <tests/data dir> <tests/fuzz/corpus/reader dir>
add_executable(gen_format_data ${CMAKE_CURRENT_SOURCE_DIR}/data/gen_format_data.c)
target_link_libraries(gen_format_data PRIVATE reelformat)
