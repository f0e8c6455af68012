# format/: unit tests, reader fuzz target, data generator.
# white-box: format_internal.h (record coding, CRC, header frames)
# One executable per concept (records, damage, writer, coding); the helpers
# of test_format_util.c built once and shared.
add_library(reel_test_format_util STATIC ${CMAKE_CURRENT_SOURCE_DIR}/test_format_util.c)
target_link_libraries(reel_test_format_util PUBLIC reel_cmocka reelformat_internal)
foreach(t records damage writer coding merge)
	reel_unit_test(test_format_${t} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_format_${t}.c
		LIBS reel_test_format_util)
endforeach()
reel_fuzz_target(reader LIBS reelformat_internal)

# Writes the crafted files of tests/data/ (built, never run by CTest):
#   gen_format_data <tests/data dir> <tests/fuzz/corpus/reader dir>
add_executable(gen_format_data ${CMAKE_CURRENT_SOURCE_DIR}/data/gen_format_data.c)
target_link_libraries(gen_format_data PRIVATE reelformat)

# Every bit of a coded file's header and footer flipped in turn (and a sample
# of its data frames): no flip loses more than the block it hits.
if(TARGET reeltool)
	reel_unit_test(test_flip SOURCES test_flip.c LIBS reelformat)
	add_dependencies(test_flip reeltool)
	target_include_directories(test_flip PRIVATE ${PROJECT_SOURCE_DIR}/capture ${PROJECT_SOURCE_DIR}/bpf)
endif()

# The writer under load: faster levels, down to stored blocks, when it falls
# behind; no DROP while they keep up; the level back when the load ends
# (FORMAT.md 4.3). White-box: the test hook that stalls the writer's thread.
reel_unit_test(test_writer_load SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_writer_load.c LIBS reelformat_internal)

# The LEVEL records of tests/data's x.2 files (gen_format_data) read back.
reel_unit_test(test_level_files SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_level_files.c LIBS reelformat)

# Repeated payloads stored once (FORMAT.md 4.4): REF records written and
# expanded back, a forced hash collision, window eviction, a pipe, a slice
# across a reference (reeltool), a cut file and a damaged target block.
reel_unit_test(test_format_dedup SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_dedup.c LIBS reelformat_internal)
if(TARGET reeltool)
	add_dependencies(test_format_dedup reeltool)
endif()
