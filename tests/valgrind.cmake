# Memcheck runs of the programs on recorded traces (plain build only: ASan and
# valgrind do not mix). Any error or definite leak fails the test.
find_program(VALGRIND valgrind)
if(VALGRIND AND NOT REEL_SANITIZE AND TARGET reelplay AND TARGET reeltool)
	set(_vg ${VALGRIND} --quiet --error-exitcode=99 --leak-check=full
		--errors-for-leak-kinds=definite --show-leak-kinds=definite)
	set(_tr ${CMAKE_CURRENT_SOURCE_DIR}/traces)
	set(_out ${CMAKE_CURRENT_BINARY_DIR}/valgrind)
	file(MAKE_DIRECTORY ${_out})
	foreach(name http1 http2 redis pgsql dns lossyhttp)
		if(EXISTS ${_tr}/${name}/${name}.reel)
			add_test(NAME valgrind_reelplay_${name}
				COMMAND ${_vg} $<TARGET_FILE:reelplay> ${_tr}/${name}/${name}.reel
					-w ${_out}/${name}.pcapng --json ${_out}/${name}.jsonl
					--summary --print)
			add_test(NAME valgrind_reeltool_${name}
				COMMAND sh -c "${VALGRIND} --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite $<TARGET_FILE:reeltool> info ${_tr}/${name}/${name}.reel >/dev/null && ${VALGRIND} --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite $<TARGET_FILE:reeltool> verify ${_tr}/${name}/${name}.reel >/dev/null && ${VALGRIND} --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite $<TARGET_FILE:reeltool> cat --json --payload ${_tr}/${name}/${name}.reel >/dev/null")
			set_tests_properties(valgrind_reelplay_${name} valgrind_reeltool_${name}
				PROPERTIES LABELS "valgrind")
		endif()
	endforeach()
endif()
