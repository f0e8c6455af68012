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
