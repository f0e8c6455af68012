# Summary counts on the recorded traces, against what the peers did (each
# trace's truth.txt): both ends of every connection are in these files, and a
# connection or exchange must be counted once.
if(TARGET reelplay)
	set(_tr ${CMAKE_CURRENT_SOURCE_DIR}/traces)
	# name, then "proto conns txns errors" of the summary's (all) line
	set(_sum_http1 "http1 1 4 0")     # curl: 4 requests on one keep-alive connection
	set(_sum_http2 "http2 1 4 0")     # node h2c: 4 requests on one connection
	set(_sum_redis "redis 9 11 2")    # 8 one-command connections + 1 with 3 INCRs; 2 errors
	set(_sum_pgsql "pgsql 1 6 1")     # startup + 5 statements, 1 failing (42P01)
	set(_sum_dns "dns 2 5 2")         # 4 UDP queries on one server socket + 1 over TCP; NXDOMAIN, REFUSED
	foreach(name http1 http2 redis pgsql dns)
		string(REPLACE " " ";" _f "${_sum_${name}}")
		list(GET _f 0 _proto)
		list(GET _f 1 _conns)
		list(GET _f 2 _txns)
		list(GET _f 3 _errs)
		add_test(NAME summary_counts_${name}
			COMMAND $<TARGET_FILE:reelplay> ${_tr}/${name}/${name}.reel --summary)
		set_tests_properties(summary_counts_${name} PROPERTIES LABELS "traces"
			PASS_REGULAR_EXPRESSION
			"\n${_proto} +\\(all\\) +${_conns} +${_txns} +${_errs} ")
	endforeach()
endif()
