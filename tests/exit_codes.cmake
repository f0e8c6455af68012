# The exit-code table of README.md ("Exit status"): every program's error
# paths (unknown option, bad value, missing, unreadable and damaged inputs,
# outputs that cannot be created or written, a capture without root,
# differences under --replay-to), each status compared with the table's.
if(TARGET reelcap AND TARGET reelplay AND TARGET reeltool)
	set(REEL_EXIT_ARGS $<TARGET_FILE:reelcap> $<TARGET_FILE:reelplay>
		$<TARGET_FILE:reeltool> ${CMAKE_CURRENT_SOURCE_DIR}/data
		${CMAKE_CURRENT_SOURCE_DIR}/traces/http1/http1.reel)
	add_test(NAME exit_codes
		COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/exit_codes.sh ${REEL_EXIT_ARGS})
	set_tests_properties(exit_codes PROPERTIES TIMEOUT 120)
	# the table's 2 for an output reelcap cannot create (needs root: it
	# checks the capabilities first)
	add_test(NAME exit_codes_reelcap_output
		COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/exit_codes.sh ${REEL_EXIT_ARGS}
			--reelcap-output)
	set_tests_properties(exit_codes_reelcap_output PROPERTIES TIMEOUT 60)
endif()
