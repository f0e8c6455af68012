# Capture area (Linux only): the loopback peer (reel_peer), its checker
# (reel_check) and a smoke test running `reelcap -- reel_peer` as root. The
# integration, loss and crash tests live in the tests engineer's own files.
if(NOT REEL_CAPTURE)
	return()
endif()
set(REEL_PEER_DIR ${CMAKE_CURRENT_SOURCE_DIR}/peer)
add_executable(reel_peer ${REEL_PEER_DIR}/reel_peer.c)

add_executable(reel_check ${REEL_PEER_DIR}/reel_check.c)
target_include_directories(reel_check PRIVATE ${PROJECT_SOURCE_DIR}/bpf)
target_link_libraries(reel_check PRIVATE reelformat)

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
