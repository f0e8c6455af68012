# reeltool (tools/): end-to-end test of the built binary on files the test
# writes with the format writer.
if(TARGET reeltool)
	reel_unit_test(test_reeltool SOURCES test_reeltool.c LIBS reelformat reelreplay)
	add_dependencies(test_reeltool reeltool)
	# capture/abi_coding.h: files coded like reelcap's (header-only, no capture code)
	target_include_directories(test_reeltool PRIVATE ${PROJECT_SOURCE_DIR}/capture)
endif()

# reeltool recover writes what it left out (DROP records of reason DAMAGED)
# and reelplay names that cause (issue 22): the built binaries on a file the
# test writes and damages.
if(TARGET reeltool AND TARGET reelplay)
	reel_unit_test(test_recover_cause SOURCES test_recover_cause.c LIBS reelformat)
	add_dependencies(test_recover_cause reeltool reelplay)
	target_include_directories(test_recover_cause PRIVATE ${PROJECT_SOURCE_DIR}/bpf)
endif()
