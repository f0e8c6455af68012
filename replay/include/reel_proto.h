/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The application protocols replay recognises, by name: what --proto takes
 * and the JSON's "proto" says. Each has a parser behind replay/l7/l7.h.
 */
#ifndef REEL_PROTO_H
#define REEL_PROTO_H

#ifdef __cplusplus
extern "C" {
#endif

enum reel_proto {
	REEL_PROTO_UNKNOWN = 0,
	REEL_PROTO_HTTP1,
	REEL_PROTO_HTTP2, /* gRPC is HTTP/2 with grpc fields set */
	REEL_PROTO_DNS,
	REEL_PROTO_REDIS,
	REEL_PROTO_PGSQL,
	REEL_PROTO_MYSQL,
	REEL_PROTO_MAX,
};

const char *reel_proto_name(enum reel_proto p); /* "http1", "http2", "dns", ... */
enum reel_proto
reel_proto_parse(const char *name); /* UNKNOWN if no match; accepts "http", "grpc" */

#ifdef __cplusplus
}
#endif
#endif /* REEL_PROTO_H */
