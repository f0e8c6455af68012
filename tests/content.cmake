# Transaction content (replay/l7/content.c, replay/output/content_json.c): the
# builder's caps, bodies (chunked, gzip, deflate, holes) and the JSON sections
# of txn lines.
reel_unit_test(test_content SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_content.c
	LIBS reelreplay_internal)
# JSON tree and structural diff (replay/regress/jsondiff.c), and its fuzz target
# (response bodies from a --replay-to target are untrusted bytes).
reel_unit_test(test_jsondiff SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_jsondiff.c
	LIBS reelreplay_internal)
reel_fuzz_target(jsondiff LIBS reelreplay_internal)
# --replay-to's response comparison (replay/regress/txncmp.c).
reel_unit_test(test_txncmp SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_txncmp.c
	LIBS reelreplay_internal)
# What --replay-to does with a recorded and a live response (the tap's parse,
# the HTTP/2 client session, the comparison): both are untrusted bytes.
reel_fuzz_target(replayto LIBS reelreplay_internal)
