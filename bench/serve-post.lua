-- wrk: every request is the same trivial run (bench/serve.sh). wrk counts
-- responses other than 2xx/3xx as errors ("Non-2xx or 3xx responses").
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"source": "print(sum(range(10)))\\n"}'
