# Transaction content (replay/l7/content.c, replay/content_json.c): the
# builder's caps, bodies (chunked, gzip, deflate, holes) and the JSON sections
# of txn lines.
reel_unit_test(test_content SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_content.c
	LIBS reelreplay_internal)
