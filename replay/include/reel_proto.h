/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The application protocols replay recognises, by name: what --proto takes
 * and the JSON's "proto" says. Each has a parser in replay/l7/ (l7.h).
 */
#ifndef REEL_PROTO_H
#define REEL_PROTO_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The registry: one line per protocol, X(NAME, name), where the parser of
 * replay/l7/name.c is `const struct reel_l7_parser reel_l7_name`. Its enum
 * value is REEL_PROTO_NAME; values are stable, so a new protocol goes last.
 * Everything else about a protocol (names, ports, detection) is in its
 * parser.
 */
#define REEL_PROTOS(X)                                                                             \
	X(HTTP1, http1)                                                                            \
	X(HTTP2, http2) /* gRPC is HTTP/2 with grpc fields set */                                  \
	X(DNS, dns)                                                                                \
	X(REDIS, redis)                                                                            \
	X(PGSQL, pgsql)                                                                            \
	X(MYSQL, mysql)

enum reel_proto {
	REEL_PROTO_UNKNOWN = 0,
#define REEL_PROTO_ENUM_(NAME, name) REEL_PROTO_##NAME,
	REEL_PROTOS(REEL_PROTO_ENUM_)
#undef REEL_PROTO_ENUM_
		REEL_PROTO_MAX,
};

const char *reel_proto_name(enum reel_proto p); /* "http1", "http2", "dns", ... */
/* UNKNOWN if no match; accepts the parsers' aliases ("http", "grpc", ...). */
enum reel_proto reel_proto_parse(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* REEL_PROTO_H */
