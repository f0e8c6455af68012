# Issue 14 end to end (root, real kernel, real clients and servers): the full
# content of curl, redis-cli, psql and pgbench traffic in the JSON, the HAR of
# HTTP/1 and HTTP/2 sessions through har-validator (npm), and --replay-to
# against tests/regress/svc.py and redis-server with and without --baseline.
if(TARGET reelcap AND TARGET reelplay)
	find_package(Python3 COMPONENTS Interpreter)
	if(Python3_Interpreter_FOUND)
		add_test(NAME regress_content_har_replay
			COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/regress/check_regress.py
				$<TARGET_FILE:reelcap> $<TARGET_FILE:reelplay>
				${CMAKE_CURRENT_BINARY_DIR}/regress)
		set_tests_properties(regress_content_har_replay PROPERTIES
			LABELS "integration;root" RUN_SERIAL TRUE TIMEOUT 300 SKIP_RETURN_CODE 77)
	endif()
endif()
