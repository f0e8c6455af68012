# reeltool (tools/): end-to-end test of the built binary on files the test
# writes with the format writer.
if(TARGET reeltool)
	reel_unit_test(test_reeltool SOURCES test_reeltool.c LIBS reelformat reelreplay)
	add_dependencies(test_reeltool reeltool)
endif()
