# reeltool (tools/): end-to-end test of the built binary on files the test
# writes with the format writer.
if(TARGET reeltool)
	reel_unit_test(test_reeltool SOURCES test_reeltool.c LIBS reelformat reelreplay)
	add_dependencies(test_reeltool reeltool)
	# capture/abi_coding.h: files coded like reelcap's (header-only, no capture code)
	target_include_directories(test_reeltool PRIVATE ${PROJECT_SOURCE_DIR}/capture)
endif()
