# L7 protocol parsers (replay/l7/: the registry and one file per protocol):
# unit tests and fuzz targets. They link their own library of just the parser
# sources so that they do not depend on the rest of the replay library.
# The IMPORTED target of replay/ is local to that directory: import it here too.
pkg_check_modules(L7_NGHTTP2 REQUIRED IMPORTED_TARGET libnghttp2)
file(GLOB REEL_L7_SRC CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/replay/l7/*.c)
# the content's JSON (replay/output/content_json.c, on replay/output/strbuf.c):
# the tests compare what the parsers keep as the JSON lines show it
add_library(reel_l7 STATIC ${REEL_L7_SRC}
	${PROJECT_SOURCE_DIR}/replay/output/content_json.c ${PROJECT_SOURCE_DIR}/replay/output/strbuf.c)
find_package(ZLIB REQUIRED)
# white-box: l7.h and l7_internal.h
target_include_directories(reel_l7 PUBLIC ${PROJECT_SOURCE_DIR}/replay/l7
	${PROJECT_SOURCE_DIR}/replay/include ${PROJECT_SOURCE_DIR}/replay/output)
target_link_libraries(reel_l7 PUBLIC PkgConfig::L7_NGHTTP2 ZLIB::ZLIB)

reel_unit_test(test_l7_http1 SOURCES test_l7_http1.c LIBS reel_l7)
reel_unit_test(test_l7_http2 SOURCES test_l7_http2.c LIBS reel_l7)
reel_unit_test(test_l7_dns SOURCES test_l7_dns.c LIBS reel_l7)
reel_unit_test(test_l7_redis SOURCES test_l7_redis.c LIBS reel_l7)
reel_unit_test(test_l7_pgsql SOURCES test_l7_pgsql.c LIBS reel_l7)
reel_unit_test(test_l7_mysql SOURCES test_l7_mysql.c LIBS reel_l7)

# Fuzz targets: tests/fuzz/fuzz_<parser>.c over tests/fuzz/fuzz_l7.h; seed
# corpora in tests/fuzz/corpus/<parser>/ (written from the unit tests' exact
# exchanges with REEL_L7_CORPUS=dir, plus edge cases and fixed crashers).
foreach(p http1 http2 dns redis pgsql mysql)
	reel_fuzz_target(${p} LIBS reel_l7)
endforeach()
