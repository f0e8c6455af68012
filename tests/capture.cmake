# Capture area (Linux only): the loopback peer (reel_peer), its checker
# (reel_check) and a smoke test running `reelcap -- reel_peer` as root. The
# integration, loss and crash tests live in the tests engineer's own files.
if(NOT REEL_CAPTURE)
	return()
endif()
set(REEL_PEER_DIR ${CMAKE_CURRENT_SOURCE_DIR}/peer)
add_executable(reel_peer ${REEL_PEER_DIR}/reel_peer.c)

# the io_uring peer (issue 10): liburing from Debian (tools/deps.sh test)
pkg_check_modules(LIBURING IMPORTED_TARGET liburing)
if(LIBURING_FOUND)
	add_executable(reel_uring_peer ${REEL_PEER_DIR}/reel_uring_peer.c)
	target_link_libraries(reel_uring_peer PRIVATE PkgConfig::LIBURING)
endif()

add_executable(reel_check ${REEL_PEER_DIR}/reel_check.c)
target_include_directories(reel_check PRIVATE ${PROJECT_SOURCE_DIR}/bpf)
target_link_libraries(reel_check PRIVATE reelformat)

# how late each kernel record reached the file (issue 22)
add_executable(reel_late ${REEL_PEER_DIR}/reel_late.c)
target_link_libraries(reel_late PRIVATE reelformat)

if(TARGET reelcap)
	add_test(NAME capture_smoke
		COMMAND sh ${REEL_PEER_DIR}/capture_smoke.sh $<TARGET_FILE:reelcap>
			$<TARGET_FILE:reel_peer> $<TARGET_FILE:reel_check>
			${CMAKE_CURRENT_BINARY_DIR}/capture_smoke)
	set_tests_properties(capture_smoke PROPERTIES LABELS "capture;root" TIMEOUT 300
		SKIP_RETURN_CODE 77)
endif()

# Whole calls (issue 10): reel_peer with 1..1024 iovecs and curl's 1 MiB and
# 16 MiB downloads, every byte in the file and in tshark's view of the pcapng.
if(TARGET reelcap AND TARGET reelplay)
	find_package(Python3 COMPONENTS Interpreter)
	if(Python3_Interpreter_FOUND)
		add_test(NAME capture_whole
			COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/whole_calls.py
				--reelcap $<TARGET_FILE:reelcap> --reelplay $<TARGET_FILE:reelplay>
				--peer $<TARGET_FILE:reel_peer> --check $<TARGET_FILE:reel_check>
				--work ${CMAKE_CURRENT_BINARY_DIR}/capture_whole)
		set_tests_properties(capture_whole PROPERTIES LABELS "capture;root;tshark"
			TIMEOUT 900 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
	endif()
endif()

# Both ends traced, each byte copied once (TWIN, bpf/ABI.md): reel_peer and
# curl against nginx, with and without --no-twin, every byte in tshark's view.
if(TARGET reelcap AND TARGET reelplay AND TARGET reeltool AND Python3_Interpreter_FOUND)
	add_test(NAME capture_twin
		COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/twin_ends.py
			--reelcap $<TARGET_FILE:reelcap> --reelplay $<TARGET_FILE:reelplay>
			--reeltool $<TARGET_FILE:reeltool> --peer $<TARGET_FILE:reel_peer>
			--check $<TARGET_FILE:reel_check> --work ${CMAKE_CURRENT_BINARY_DIR}/capture_twin)
	set_tests_properties(capture_twin PROPERTIES LABELS "capture;root;tshark"
		TIMEOUT 900 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endif()

# Both ends traced, bytes sent and never read (issue 22): a client reads
# 1,000 bytes of nginx's 64 KiB answer and closes; the pcapng carries all
# that nginx sent (tshark follow), the FIN after its last byte.
if(TARGET reelcap AND TARGET reelplay AND Python3_Interpreter_FOUND)
	add_test(NAME capture_twin_unread
		COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/twin_unread.py
			--reelcap $<TARGET_FILE:reelcap> --reelplay $<TARGET_FILE:reelplay>
			--work ${CMAKE_CURRENT_BINARY_DIR}/capture_twin_unread)
	set_tests_properties(capture_twin_unread PROPERTIES LABELS "capture;root;tshark"
		TIMEOUT 120 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endif()

# sendfile bodies (issue 10): nginx with sendfile on, bodies read back from
# the files (FILL records), a rewritten file a marked hole, --no-file-fill.
if(TARGET reelcap AND TARGET reelplay AND TARGET reeltool AND Python3_Interpreter_FOUND)
	add_test(NAME capture_sendfile
		COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/sendfile_fill.py
			--reelcap $<TARGET_FILE:reelcap> --reelplay $<TARGET_FILE:reelplay>
			--reeltool $<TARGET_FILE:reeltool>
			--work ${CMAKE_CURRENT_BINARY_DIR}/capture_sendfile)
	set_tests_properties(capture_sendfile PROPERTIES LABELS "capture;root;tshark"
		TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endif()

# io_uring (issue 10): reel_uring_peer's io_uring sends and receives are
# sized holes at their stream positions, consistent with its syscalls.
if(TARGET reelcap AND TARGET reel_uring_peer AND TARGET reeltool)
	add_test(NAME capture_uring
		COMMAND sh ${REEL_PEER_DIR}/uring_check.sh $<TARGET_FILE:reelcap>
			$<TARGET_FILE:reel_uring_peer> $<TARGET_FILE:reel_check>
			$<TARGET_FILE:reeltool> ${CMAKE_CURRENT_BINARY_DIR}/capture_uring)
	set_tests_properties(capture_uring PROPERTIES LABELS "capture;root" TIMEOUT 120
		RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endif()

# Overload (issue 10): a 64 KiB ring, a burst of 64 KiB requests and
# responses both ends traced: every request and status line in the JSON,
# overload cuts and losses counted apart and adding up to what is missing.
if(TARGET reelcap AND TARGET reelplay AND TARGET reeltool AND Python3_Interpreter_FOUND)
	add_test(NAME capture_overload
		COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/overload.py
			--reelcap $<TARGET_FILE:reelcap> --reelplay $<TARGET_FILE:reelplay>
			--reeltool $<TARGET_FILE:reeltool>
			--work ${CMAKE_CURRENT_BINARY_DIR}/capture_overload)
	set_tests_properties(capture_overload PROPERTIES LABELS "capture;root" TIMEOUT 300
		RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endif()

# Overload cuts in plain sight (issue 22): the overload capture with
# --stats 1 -q: "N bytes cut" on the stats lines and on the final line (there
# with -q), equal to the file's OVERLOAD bytes (reeltool info, reelplay).
if(TARGET reelcap AND TARGET reelplay AND TARGET reeltool AND Python3_Interpreter_FOUND)
	add_test(NAME capture_overload_stats
		COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/overload_stats.py
			--reelcap $<TARGET_FILE:reelcap> --reelplay $<TARGET_FILE:reelplay>
			--reeltool $<TARGET_FILE:reeltool>
			--work ${CMAKE_CURRENT_BINARY_DIR}/capture_overload_stats)
	set_tests_properties(capture_overload_stats PROPERTIES LABELS "capture;root" TIMEOUT 300
		RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endif()

# tcp_seq of a read that also takes the peer's FIN (issue 10).
if(TARGET reelcap AND TARGET reeltool AND Python3_Interpreter_FOUND)
	# Capabilities of every reelcap thread after attach (issue 22): the
	# drain, the TLS discovery thread and the writer keep what they need only.
	add_test(NAME capture_thread_caps
		COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/thread_caps.py
			--reelcap $<TARGET_FILE:reelcap>
			--work ${CMAKE_CURRENT_BINARY_DIR}/capture_thread_caps)
	set_tests_properties(capture_thread_caps PROPERTIES LABELS "capture;root" TIMEOUT 120
		SKIP_RETURN_CODE 77)
	add_test(NAME capture_fin_seq
		COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/fin_seq.py
			--reelcap $<TARGET_FILE:reelcap> --reeltool $<TARGET_FILE:reeltool>
			--work ${CMAKE_CURRENT_BINARY_DIR}/capture_fin_seq)
	set_tests_properties(capture_fin_seq PROPERTIES LABELS "capture;root" TIMEOUT 60
		RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endif()

# Records on time from every CPU on a busy host (issue 22): a --port capture
# (TLS on) of a POST every 0.4 s beside a CPU hog per CPU, an exec loop of
# libssl/libgnutls programs and a second reelcap; every kernel record on
# disk within --flush-ms + the margin capture/README.md states ("Records on
# time"), every POST paired in reelplay's JSON with no hole.
if(TARGET reelcap AND TARGET reelplay AND Python3_Interpreter_FOUND)
	add_test(NAME capture_late_records
		COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/late_records.py
			--reelcap $<TARGET_FILE:reelcap> --reelplay $<TARGET_FILE:reelplay>
			--late $<TARGET_FILE:reel_late> --flush-ms 250 --margin-ms 500
			--work ${CMAKE_CURRENT_BINARY_DIR}/capture_late_records)
	set_tests_properties(capture_late_records PROPERTIES LABELS "capture;root"
		TIMEOUT 120 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endif()

# Ctrl-C (issue 23): "stopping" said at once, the exit within a generous
# bound of one SIGINT (the uprobes detached after reelcap is gone), the
# exchange in the file; a second SIGINT stops at once, exit 130.
if(TARGET reelcap AND TARGET reeltool AND Python3_Interpreter_FOUND)
	add_test(NAME capture_stop_prompt
		COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/stop_prompt.py
			--reelcap $<TARGET_FILE:reelcap> --reeltool $<TARGET_FILE:reeltool>
			--work ${CMAKE_CURRENT_BINARY_DIR}/capture_stop_prompt)
	set_tests_properties(capture_stop_prompt PROPERTIES LABELS "capture;root" TIMEOUT 60
		SKIP_RETURN_CODE 77)
endif()

# Usage errors (issue 23): one line saying what was wrong and the --help
# hint, exit 2; a capture as nobody: one line saying what it needs, no
# libbpf text, exit 1.
if(TARGET reelcap AND Python3_Interpreter_FOUND)
	add_test(NAME capture_usage_errors
		COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/usage_errors.py
			--reelcap $<TARGET_FILE:reelcap>
			--work ${CMAKE_CURRENT_BINARY_DIR}/capture_usage_errors)
	set_tests_properties(capture_usage_errors PROPERTIES LABELS "capture" TIMEOUT 60
		SKIP_RETURN_CODE 77)
endif()

# Process events and the TLS report in scope (issue 23): `reelcap --print
# --port P` beside an exec loop prints the exchange and no other process's
# events; reelplay --summary's TLS section lists the process that used P.
if(TARGET reelcap AND TARGET reelplay AND Python3_Interpreter_FOUND)
	add_test(NAME capture_proc_scope
		COMMAND ${Python3_EXECUTABLE} ${REEL_PEER_DIR}/proc_scope.py
			--reelcap $<TARGET_FILE:reelcap> --reelplay $<TARGET_FILE:reelplay>
			--work ${CMAKE_CURRENT_BINARY_DIR}/capture_proc_scope)
	set_tests_properties(capture_proc_scope PROPERTIES LABELS "capture;root" TIMEOUT 60
		SKIP_RETURN_CODE 77)
endif()
