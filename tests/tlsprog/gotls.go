// SPDX-License-Identifier: BSD-2-Clause
//
// A Go HTTP/1.1-over-TLS client and server for the TLS capture tests, built
// with symbols and stripped (-ldflags '-s -w'): net/http and crypto/tls with
// their own defaults.
//
//	gotls server ADDR CERT KEY
//	    serves GET /n/SIZE with SIZE bytes of body(SIZE) and a
//	    Content-Length; prints "ready" once listening.
//	gotls client BASEURL DUMP PATH...
//	    GETs each path in turn over one kept-alive connection, appends each
//	    request as the transport writes it (httputil.DumpRequestOut) to
//	    DUMP, checks each body, prints "STATUS LEN" per response.
package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"strconv"
	"strings"
)

// body is the test pattern: byte i of a SIZE-byte body.
func body(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i*7 + size + i/251)
	}
	return b
}

func server(addr, cert, key string) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/n/", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/n/"))
		if err != nil || n < 0 || n > 1<<24 {
			http.Error(w, "bad size", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(body(n))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	return http.ServeTLS(ln, mux, cert, key)
}

func client(base, dump string, paths []string) error {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	c := &http.Client{Transport: tr}
	f, err := os.Create(dump)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range paths {
		req, err := http.NewRequest("GET", base+p, nil)
		if err != nil {
			return err
		}
		out, err := httputil.DumpRequestOut(req, false)
		if err != nil {
			return err
		}
		f.Write(out)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if n, err := strconv.Atoi(strings.TrimPrefix(p, "/n/")); err == nil &&
			!bytes.Equal(got, body(n)) {
			return fmt.Errorf("%s: body differs", p)
		}
		fmt.Println(resp.StatusCode, len(got))
	}
	return nil
}

func main() {
	var err error
	switch {
	case len(os.Args) == 5 && os.Args[1] == "server":
		err = server(os.Args[2], os.Args[3], os.Args[4])
	case len(os.Args) >= 5 && os.Args[1] == "client":
		err = client(os.Args[2], os.Args[3], os.Args[4:])
	default:
		err = fmt.Errorf("usage: gotls server ADDR CERT KEY | gotls client BASEURL DUMP PATH...")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotls:", err)
		os.Exit(1)
	}
}
