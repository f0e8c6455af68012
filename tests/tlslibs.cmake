# TLS beyond the system's libssl (issue 12): the test programs (a Go client
# and server, built with symbols and stripped; a client on OpenSSL's API
# linked statically with libssl.a, and one against Debian's BoringSSL), the
# discovery unit test on real binaries (test_tlsobj) and the capture test
# with real peers (test_capture_tlslibs). tools/deps.sh test installs
# golang-go, gnutls-bin, android-libboringssl-dev and libssl-dev; a missing
# one skips its part (and says so).
set(REEL_TLSPROG ${CMAKE_CURRENT_BINARY_DIR}/tlsprog)
file(MAKE_DIRECTORY ${REEL_TLSPROG})
set(REEL_TLSPROG_TARGETS)

find_program(REEL_GO go)
if(REEL_GO)
	set(_go_env GO111MODULE=off GOCACHE=${CMAKE_BINARY_DIR}/gocache
		GOPATH=${CMAKE_BINARY_DIR}/gopath GOFLAGS= CGO_ENABLED=0)
	add_custom_command(OUTPUT ${REEL_TLSPROG}/gotls ${REEL_TLSPROG}/gotls-stripped
		COMMAND ${CMAKE_COMMAND} -E env ${_go_env} ${REEL_GO} build
			-o ${REEL_TLSPROG}/gotls ${CMAKE_CURRENT_SOURCE_DIR}/tlsprog/gotls.go
		COMMAND ${CMAKE_COMMAND} -E env ${_go_env} ${REEL_GO} build -ldflags=-s\ -w
			-o ${REEL_TLSPROG}/gotls-stripped ${CMAKE_CURRENT_SOURCE_DIR}/tlsprog/gotls.go
		DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tlsprog/gotls.go
		COMMENT "go build tests/tlsprog/gotls.go (with symbols, and -s -w)")
	add_custom_target(tlsprog_go ALL DEPENDS ${REEL_TLSPROG}/gotls
		${REEL_TLSPROG}/gotls-stripped)
	list(APPEND REEL_TLSPROG_TARGETS tlsprog_go)
endif()

find_library(REEL_LIBSSL_A NAMES libssl.a)
find_library(REEL_LIBCRYPTO_A NAMES libcrypto.a)
if(REEL_LIBSSL_A AND REEL_LIBCRYPTO_A)
	add_executable(sslcli_static tlsprog/sslcli.c)
	set_target_properties(sslcli_static PROPERTIES OUTPUT_NAME sslcli-static
		RUNTIME_OUTPUT_DIRECTORY ${REEL_TLSPROG})
	target_link_libraries(sslcli_static PRIVATE ${REEL_LIBSSL_A} ${REEL_LIBCRYPTO_A}
		${CMAKE_DL_LIBS} Threads::Threads)
	list(APPEND REEL_TLSPROG_TARGETS sslcli_static)
endif()

set(REEL_BORINGSSL_DIR /usr/lib/x86_64-linux-gnu/android)
if(EXISTS ${REEL_BORINGSSL_DIR}/libssl.so AND EXISTS /usr/include/android/openssl/ssl.h)
	add_executable(sslcli_boring tlsprog/sslcli.c)
	set_target_properties(sslcli_boring PROPERTIES OUTPUT_NAME sslcli-boring
		RUNTIME_OUTPUT_DIRECTORY ${REEL_TLSPROG}
		BUILD_RPATH ${REEL_BORINGSSL_DIR})
	target_include_directories(sslcli_boring BEFORE PRIVATE /usr/include/android)
	target_link_libraries(sslcli_boring PRIVATE ${REEL_BORINGSSL_DIR}/libssl.so
		${REEL_BORINGSSL_DIR}/libcrypto.so)
	list(APPEND REEL_TLSPROG_TARGETS sslcli_boring)
endif()

if(REEL_CAPTURE AND TARGET reeltlsfind)
	reel_unit_test(test_tlsobj
		SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_tlsobj.c
		LIBS reeltlsfind)
	target_compile_definitions(test_tlsobj PRIVATE REEL_TLSPROG="${REEL_TLSPROG}")
	if(REEL_TLSPROG_TARGETS)
		add_dependencies(test_tlsobj ${REEL_TLSPROG_TARGETS})
	endif()
endif()

if(REEL_CAPTURE AND TARGET reeltlsfind)
	reel_fuzz_target(gopclntab LIBS reeltlsfind)
endif()

if(REEL_CAPTURE AND TARGET reelcap AND TARGET reelplay)
	reel_capture_test(test_capture_tlslibs SOURCES test_tls_util.c
		PROGRAMS reelcap reelplay reeltool
		DEFINES REEL_TLSPROG="${REEL_TLSPROG}" REEL_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}"
		DEPENDS ${REEL_TLSPROG_TARGETS}
		TIMEOUT 600)
endif()

# Short-lived clients exec'd during a --port capture (a fresh copy of the
# stripped Go client and of node): plaintext from their first call, and the
# report's exec-to-hooked time (issue 22, item 8).
if(REEL_CAPTURE AND TARGET reelcap AND TARGET reelplay AND TARGET tlsprog_go)
	reel_capture_test(test_capture_tlsexec SOURCES test_tls_util.c
		PROGRAMS reelcap reelplay
		DEFINES REEL_TLSPROG="${REEL_TLSPROG}" REEL_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}"
		DEPENDS tlsprog_go
		TIMEOUT 180)
endif()
