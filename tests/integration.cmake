# Integration tests of the capture on the real kernel (root): reelcap around
# reel_peer (all transports and syscall variants, snaplen), loss on a tiny
# ring, SIGKILL mid-capture. Label "integration", run serially (they load BPF
# programs that see every process and measure nothing timed). evgen, the paced
# event generator of the capture benchmark, is built here too.
if(REEL_CAPTURE AND TARGET reelcap AND TARGET reel_peer AND TARGET reeltool)
	add_executable(evgen ${CMAKE_CURRENT_SOURCE_DIR}/bench/evgen.c)
	target_link_libraries(evgen PRIVATE Threads::Threads)

	function(reel_capture_test name)
		reel_unit_test(${name}
			SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/${name}.c
				${CMAKE_CURRENT_SOURCE_DIR}/test_capture_common.c
			LIBS reelreplay
			LABELS "integration;root")
		target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
			${CMAKE_CURRENT_SOURCE_DIR}/peer)
		target_compile_definitions(${name} PRIVATE
			REELCAP_BIN="$<TARGET_FILE:reelcap>"
			REEL_PEER_BIN="$<TARGET_FILE:reel_peer>"
			REELTOOL_BIN="$<TARGET_FILE:reeltool>"
			EVGEN_BIN="$<TARGET_FILE:evgen>"
			REEL_TRACES_DIR="${CMAKE_CURRENT_SOURCE_DIR}/traces")
		add_dependencies(${name} reelcap reel_peer reeltool evgen)
		set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE TIMEOUT 300)
	endfunction()

	foreach(t test_capture_it test_capture_loss test_capture_crash)
		if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${t}.c)
			reel_capture_test(${t})
		endif()
	endforeach()
endif()
