# Byte identity of replay's outputs (issue 13): every regression trace, the
# crafted files of tests/data/ and two fixed captures, replayed to pcapng,
# JSON, --print, --summary, -F pcap, a filter expression, --each-end and
# through reeltool info/verify/cat, compared with the sha256 sums stored in
# tests/identity/expected.sha256 (taken before the pipeline split).
if(TARGET reelplay AND TARGET reeltool)
	add_test(NAME replay_byte_identity
		COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/identity/check_identity.sh
			$<TARGET_FILE:reelplay> $<TARGET_FILE:reeltool>
			${CMAKE_CURRENT_BINARY_DIR}/identity)
	set_tests_properties(replay_byte_identity PROPERTIES LABELS "traces" TIMEOUT 600)
endif()
