# TLS plaintext capture (real kernel, root): reelcap around curl -k against
# openssl s_server -WWW, with the libssl uprobes and with --no-tls; the
# file, reelplay's JSON, pcapng and --print are checked.
if(REEL_CAPTURE AND TARGET reelcap AND TARGET reelplay)
	reel_capture_test(test_capture_tls SOURCES test_tls_util.c PROGRAMS reelcap reelplay)
endif()
