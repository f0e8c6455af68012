# TLS plaintext capture (real kernel, root): reelcap around curl -k against
# openssl s_server -WWW, with the libssl uprobes and with --no-tls; the
# file, reelplay's JSON, pcapng and --print are checked.
if(REEL_CAPTURE AND TARGET reelcap AND TARGET reelplay)
	reel_unit_test(test_capture_tls
		SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_capture_tls.c
			${CMAKE_CURRENT_SOURCE_DIR}/test_capture_common.c
			${CMAKE_CURRENT_SOURCE_DIR}/test_tls_util.c
		LIBS reelreplay
		LABELS "integration;root")
	target_include_directories(test_capture_tls PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
		${CMAKE_CURRENT_SOURCE_DIR}/peer)
	target_compile_definitions(test_capture_tls PRIVATE
		REELCAP_BIN="$<TARGET_FILE:reelcap>"
		REELPLAY_BIN="$<TARGET_FILE:reelplay>")
	add_dependencies(test_capture_tls reelcap reelplay)
	set_tests_properties(test_capture_tls PROPERTIES RUN_SERIAL TRUE TIMEOUT 300)
endif()
