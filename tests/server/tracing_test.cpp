// OpenTelemetry tracing on the real binary (README "Tracing"): spans exported over OTLP/HTTP to
// a test collector that decodes them with the official protobuf definitions
// (tests/clients/otlp_collector.mjs). A request's spans form one tree under the caller's span,
// with GenAI attributes and durations that nest; steps link to the requests they served;
// sampling follows the caller's flag; a collector that is down or failing costs requests nothing
// and what is lost is counted.
#include "cluster_process.hpp"
#include "otlp_collector.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <set>
#include <thread>

namespace bitnet::test {

namespace {

constexpr const char* caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr const char* caller_span = "00f067aa0ba902b7";

std::string traceparent(const char* trace, const char* span, const char* flags) {
    return std::string("00-") + trace + "-" + span + "-" + flags;
}

/// The spans of `trace` once at least `n` named `name` arrived (bounded wait).
std::vector<collected_span> wait_for(const otlp_collector& c, const std::string& trace,
                                     const std::string& name, std::size_t n = 1) {
    std::vector<collected_span> got;
    eventually(
        [&] {
            got = c.trace(trace);
            std::size_t k = 0;
            for (const auto& s : got)
                k += s.name() == name ? 1 : 0;
            return k >= n;
        },
        std::chrono::seconds(20));
    return got;
}

/// The spans of `trace` once one of each name in `names` arrived (bounded wait): spans of one
/// request end at different times and may reach the collector in different exports.
std::vector<collected_span> wait_for_all(const otlp_collector& c, const std::string& trace,
                                         const std::vector<std::string>& names) {
    std::vector<collected_span> got;
    for (const auto& name : names)
        got = wait_for(c, trace, name);
    return got;
}

std::string dump(const std::vector<collected_span>& spans) {
    std::string out;
    for (const auto& s : spans)
        out += boost::json::serialize(s.o) + "\n";
    return out;
}

/// Durations nest: queue, prefill and decode follow each other inside generate, which lies
/// inside the server span.
void check_nested(const collected_span& http, const collected_span& gen,
                  const collected_span& queue, const collected_span& prefill,
                  const collected_span& decode) {
    CHECK(http.start() <= gen.start());
    CHECK(gen.end() <= http.end());
    CHECK(queue.start() >= gen.start());
    CHECK(queue.end() <= prefill.start() + 1);
    CHECK(prefill.end() <= decode.start() + 1);
    CHECK(decode.end() <= gen.end());
    CHECK((queue.end() - queue.start()) + (prefill.end() - prefill.start()) +
              (decode.end() - decode.start()) <=
          http.end() - http.start());
    CHECK(decode.end() > decode.start());
}

/// Whether the JSON log's request line (the one with finish=) carries `trace` and `span` as its
/// correlation ids, with the request id, level, time and node.
bool request_line_has_trace(const std::string& log, const std::string& trace,
                            const std::string& span) {
    std::size_t at = 0;
    while ((at = log.find('\n', at)) != std::string::npos) {
        const auto next = log.find('\n', at + 1);
        const auto line =
            log.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
        at = at + 1;
        if (line.find("finish=") == std::string::npos)
            continue;
        const auto o = boost::json::parse(line).as_object();
        if (o.at("trace_id").as_string() == trace && o.at("span_id").as_string() == span &&
            o.at("request_id").as_string().starts_with("req-") &&
            o.at("level").as_string() == "info" && o.contains("time") && o.contains("node"))
            return true;
    }
    return false;
}

} // namespace

TEST_CASE("tracing: a streamed completion with a traceparent yields one span tree under the "
          "caller's span, with GenAI attributes, nested durations and linked step spans") {
    otlp_collector col;
    server_process s({"--otlp-endpoint", col.endpoint(), "--log-format", "json", "--otlp-headers",
                      "authorization=Bearer collector-secret"});
    const std::string secret_prompt = "Once upon a time in a zanzibar kingdom";
    const auto r =
        http_request(s.port(), boost::beast::http::verb::post, "/v1/completions",
                     R"({"prompt":")" + secret_prompt +
                         R"(","max_tokens":8,"stream":true,)"
                         R"("temperature":0})",
                     {}, {{"traceparent", traceparent(caller_trace, caller_span, "01")}});
    REQUIRE(r.status == 200);
    // The caller learns the trace and our server span from traceresponse (W3C Level 2).
    const auto tr = r.headers.count("traceresponse") ? r.headers.at("traceresponse") : "";
    REQUIRE(tr.rfind(std::string("00-") + caller_trace + "-", 0) == 0);
    const auto server_span_id = tr.substr(36, 16);

    const auto spans = wait_for_all(col, caller_trace,
                                    {"bitnet.decode", "bitnet.generate", "POST /v1/completions"});
    INFO(dump(spans));
    const auto* http = find_span(spans, "POST /v1/completions");
    const auto* adm = find_span(spans, "bitnet.admission");
    const auto* tok = find_span(spans, "bitnet.tokenize");
    const auto* gen = find_span(spans, "bitnet.generate");
    const auto* queue = find_span(spans, "bitnet.queue");
    const auto* prefill = find_span(spans, "bitnet.prefill");
    const auto* decode = find_span(spans, "bitnet.decode");
    REQUIRE(http);
    REQUIRE(adm);
    REQUIRE(tok);
    REQUIRE(gen);
    REQUIRE(queue);
    REQUIRE(prefill);
    REQUIRE(decode);

    // The tree: the server span's parent is the caller's; every span reaches the caller.
    CHECK(http->id() == server_span_id);
    CHECK(http->parent() == caller_span);
    CHECK(http->o.at("kind").to_number<int>() == 2); // SERVER
    CHECK(adm->parent() == http->id());
    CHECK(tok->parent() == adm->id());
    CHECK(gen->parent() == http->id());
    for (const auto* c : {queue, prefill, decode})
        CHECK(c->parent() == gen->id());
    for (const auto& x : spans)
        CHECK_MESSAGE(reaches(spans, x, caller_span), x.name());

    // Attributes: HTTP and GenAI conventions.
    CHECK(http->attr_str("http.route") == "/v1/completions");
    CHECK(http->attr_num("http.response.status_code") == 200);
    CHECK(http->attr_str("gen_ai.operation.name") == "text_completion");
    CHECK(http->attr_num("gen_ai.request.max_tokens") == 8);
    CHECK(!http->attr_str("gen_ai.request.model").empty());
    CHECK(http->attr_num("gen_ai.usage.input_tokens") > 0);
    CHECK(http->attr_num("gen_ai.usage.output_tokens") >= 1);
    CHECK(http->attr_num("gen_ai.usage.output_tokens") <= 8);
    REQUIRE(http->attr("gen_ai.response.finish_reasons"));
    CHECK(http->attr("gen_ai.response.finish_reasons")->is_array());
    CHECK(gen->attr_num("gen_ai.usage.output_tokens") ==
          http->attr_num("gen_ai.usage.output_tokens"));
    CHECK(tok->attr_num("bitnet.prompt_tokens") == gen->attr_num("gen_ai.usage.input_tokens"));
    CHECK(adm->attr_str("bitnet.admission.outcome") == "queued");
    CHECK(!prefill->o.at("events").as_array().empty()); // its chunks

    check_nested(*http, *gen, *queue, *prefill, *decode);

    // The resource names the service and this node.
    const auto& res = http->o.at("resource").as_object();
    CHECK(res.at("service.name").as_string() == "bitnet-serve");
    CHECK(!res.at("service.instance.id").as_string().empty());
    CHECK(!res.at("service.version").as_string().empty());

    // Steps are spans of their own traces, linked to the generate span of what they served.
    bool linked = false;
    eventually([&] {
        for (const auto& x : col.spans())
            if (x.name() == "bitnet.step")
                for (const auto& l : x.o.at("links").as_array())
                    linked |= l.as_object().at("spanId").as_string() == gen->id() &&
                              l.as_object().at("traceId").as_string() == caller_trace &&
                              x.trace() != caller_trace && x.attr_num("bitnet.step.sequences") >= 1;
        return linked;
    });
    CHECK(linked);

    // No prompt or output text without otlp_include_text.
    for (const auto& x : col.spans())
        CHECK(boost::json::serialize(x.o).find("zanzibar") == std::string::npos);
    // The collector's credential went with every export, as protobuf.
    const auto reqs = col.lines("request");
    REQUIRE(!reqs.empty());
    for (const auto& q : reqs) {
        CHECK(q.at("headers").as_object().at("authorization").as_string() ==
              "Bearer collector-secret");
        CHECK(q.at("content_type").as_string() == "application/x-protobuf");
    }
    // JSON logs carry the trace as the correlation id of the request's line.
    CHECK_MESSAGE(request_line_has_trace(s.log(), caller_trace, http->id()), s.log());
}

TEST_CASE("tracing: sampling is parent-based (a caller's flag decides), new traces follow "
          "otlp_sample_ratio, and otlp_include_text adds the text") {
    otlp_collector col;
    server_process s({"--otlp-endpoint", col.endpoint(), "--otlp-sample-ratio", "0",
                      "--otlp-include-text", "1"});
    const auto body = R"({"prompt":"zanzibar","max_tokens":3,"temperature":0})";
    // Ratio 0: a request without a traceparent is traced by id only (the header), not recorded.
    const auto plain = s.post("/v1/completions", body);
    REQUIRE(plain.status == 200);
    const auto plain_trace = plain.headers.at("traceresponse").substr(3, 32);
    CHECK(plain.headers.at("traceresponse").substr(53) == "00");
    // A caller who did not sample: nothing either. A caller who did: its trace, at ratio 0.
    const char* unsampled = "11111111111111111111111111111111";
    REQUIRE(http_request(s.port(), boost::beast::http::verb::post, "/v1/completions", body, {},
                         {{"traceparent", traceparent(unsampled, caller_span, "00")}})
                .status == 200);
    const char* sampled = "22222222222222222222222222222222";
    const auto yes = http_request(s.port(), boost::beast::http::verb::post, "/v1/completions", body,
                                  {}, {{"traceparent", traceparent(sampled, caller_span, "01")}});
    REQUIRE(yes.status == 200);
    CHECK(yes.headers.at("traceresponse").substr(53) == "01");
    const auto spans = wait_for(col, sampled, "POST /v1/completions");
    REQUIRE(find_span(spans, "POST /v1/completions"));
    // The sampled request's spans went out after the others': none of theirs came.
    CHECK(col.trace(plain_trace).empty());
    CHECK(col.trace(unsampled).empty());
    // A malformed traceparent starts a new trace (here: not sampled, ratio 0).
    const auto bad = http_request(s.port(), boost::beast::http::verb::post, "/v1/completions", body,
                                  {}, {{"traceparent", "00-zz-not-a-trace"}});
    REQUIRE(bad.status == 200);
    CHECK(bad.headers.at("traceresponse").find("zz") == std::string::npos);
    // otlp_include_text: the prompt and the output text are on the server span.
    const auto* http = find_span(spans, "POST /v1/completions");
    CHECK(http->attr_str("bitnet.prompt") == "zanzibar");
    CHECK(http->attr("bitnet.completion"));
}

TEST_CASE("tracing: a collector that is down or failing costs requests nothing, retries "
          "recover, and what is lost is counted in bitnet_trace_spans_dropped_total") {
    SUBCASE("down: every export fails, spans are dropped and counted, requests all succeed") {
        // A port with nothing listening: bind one, then close it.
        std::uint16_t dead = 0;
        {
            boost::asio::io_context io;
            boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
            dead = a.local_endpoint().port();
        }
        server_process s({"--otlp-endpoint", "http://127.0.0.1:" + std::to_string(dead),
                          "--otlp-timeout-ms", "200"});
        for (int i = 0; i < 6; ++i)
            REQUIRE(s.post("/v1/completions", R"({"prompt":"hi","max_tokens":4})").status == 200);
        double dropped = 0;
        CHECK(eventually(
            [&] {
                dropped = sample(s.get("/metrics").body, "bitnet_trace_spans_dropped_total");
                return dropped >= 6 * 5; // five spans or more per request
            },
            std::chrono::seconds(30)));
        CHECK(sample(s.get("/metrics").body, "bitnet_trace_spans_exported_total") == 0);
        CHECK(s.log().find("tracing:") != std::string::npos);
    }
    SUBCASE("failing twice with 503: the batch is retried and arrives, nothing is dropped") {
        otlp_collector col({"--fail-first", "2", "--status", "503"});
        server_process s({"--otlp-endpoint", col.endpoint()});
        const auto r = s.post("/v1/completions", R"({"prompt":"hi","max_tokens":4})");
        REQUIRE(r.status == 200);
        const auto trace = r.headers.at("traceresponse").substr(3, 32);
        const auto spans = wait_for(col, trace, "bitnet.generate");
        CHECK(find_span(spans, "bitnet.generate"));
        CHECK(sample(s.get("/metrics").body, "bitnet_trace_spans_dropped_total") == 0);
        CHECK(eventually([&] {
            return sample(s.get("/metrics").body, "bitnet_trace_spans_exported_total") >= 5;
        }));
    }
}

TEST_CASE("tracing: tracing off exports nothing and still answers traceresponse, and a bad "
          "endpoint or header is a configuration error") {
    server_process s;
    const auto r = s.post("/v1/completions", R"({"prompt":"hi","max_tokens":2})");
    REQUIRE(r.status == 200);
    REQUIRE(r.headers.count("traceresponse") == 1);
    CHECK(r.headers.at("traceresponse").substr(53) == "00"); // off: never sampled
    CHECK(r.headers.count("x-request-id") == 1);
    struct bad_config {
        std::vector<std::string> args;
        const char* key; ///< the key the error must name
    };
    for (const auto& c : std::vector<bad_config>{
             {{"--otlp-endpoint", "collector:4318"}, "otlp_endpoint"},
             {{"--otlp-endpoint", "http://"}, "otlp_endpoint"},
             {{"--otlp-endpoint", "http://c:4318", "--otlp-headers", "novalue"}, "otlp_headers"},
             {{"--otlp-sample-ratio", "1.5"}, "otlp_sample_ratio"},
             {{"--log-format", "xml"}, "log_format"}}) {
        std::string cmd = "--print-config";
        for (const auto& a : c.args)
            cmd += " '" + a + "'";
        const auto out = run_tool("bitnet-server", cmd);
        CHECK_MESSAGE(out.exit_code == 2, cmd << "\n" << out.out << out.err);
        CHECK_MESSAGE(out.err.find(c.key) != std::string::npos, out.err);
    }
}

TEST_CASE("tracing: a refused request's admission span says why, a schema compile has its span, "
          "a client that leaves makes a 499 server span, preemption and recompute are events") {
    otlp_collector col;
    // No speculative decoding: its accepted drafts end requests sooner, and the preemption
    // subcase needs the pressure of four long requests at once.
    server_process s(
        {"--otlp-endpoint", col.endpoint(), "--kv-budget-bytes", "262144", "--speculative", "off"});
    auto traced_post = [&](const char* trace, const std::string& body) {
        return http_request(s.port(), boost::beast::http::verb::post, "/v1/completions", body, {},
                            {{"traceparent", traceparent(trace, caller_span, "01")}});
    };
    SUBCASE("refused: no such model") {
        const char* t = "33333333333333333333333333333333";
        REQUIRE(traced_post(t, R"({"model":"nope","prompt":"hi","max_tokens":2})").status == 404);
        const auto spans = wait_for(col, t, "bitnet.admission");
        INFO(dump(spans));
        const auto* adm = find_span(spans, "bitnet.admission");
        REQUIRE(adm);
        CHECK(adm->attr_str("bitnet.admission.outcome") == "refused");
        CHECK(adm->attr_str("bitnet.admission.reason") == "not_found");
        CHECK(adm->o.at("status").as_object().at("code").to_number<int>() == 2); // ERROR
        const auto http = wait_for(col, t, "POST /v1/completions");
        const auto* h = find_span(http, "POST /v1/completions");
        REQUIRE(h);
        CHECK(h->attr_num("http.response.status_code") == 404);
        CHECK(find_span(http, "bitnet.generate") == nullptr);
    }
    SUBCASE("a JSON Schema compiled for the request") {
        const char* t = "44444444444444444444444444444444";
        const auto body =
            R"({"prompt":"hi","max_tokens":24,"temperature":0,"response_format":{"type":)"
            R"("json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":)"
            R"({"tracing_key_7":{"type":"integer"}},"required":["tracing_key_7"]}}}})";
        REQUIRE(traced_post(t, body).status == 200);
        const auto spans = wait_for_all(
            col, t, {"bitnet.schema_compile", "bitnet.generate", "POST /v1/completions"});
        INFO(dump(spans));
        const auto* sc = find_span(spans, "bitnet.schema_compile");
        REQUIRE(sc);
        CHECK(sc->attr_str("bitnet.schema_param") == "response_format");
        CHECK(sc->end() >= sc->start());
        CHECK(reaches(spans, *sc, caller_span));
    }
    SUBCASE("the client leaves mid-stream") {
        const char* t = "55555555555555555555555555555555";
        namespace net = boost::asio;
        net::io_context io;
        net::ip::tcp::socket sock(io);
        sock.connect({net::ip::make_address("127.0.0.1"), s.port()});
        const std::string body = R"({"prompt":"hi","max_tokens":2000,"stream":true})";
        const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                "Content-Type: application/json\r\ntraceparent: " +
                                traceparent(t, caller_span, "01") +
                                "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                                body;
        net::write(sock, net::buffer(req));
        std::array<char, 4096> buf{};
        std::size_t got = 0;
        while (got < 600) // the head and some tokens
            got += sock.read_some(net::buffer(buf));
        sock.close();
        const auto spans = wait_for(col, t, "POST /v1/completions");
        INFO(dump(spans));
        const auto* h = find_span(spans, "POST /v1/completions");
        REQUIRE(h);
        CHECK(h->attr_num("http.response.status_code") == 499);
        CHECK(h->attr_num("gen_ai.usage.output_tokens") >= 1);
    }
    SUBCASE("preempted under a small KV pool, then recomputed") {
        // As prefix_cache_test: four 57-token prompts generating 60 tokens each need more than
        // the 16 blocks, so the newest are preempted and computed again.
        std::vector<std::string> traces;
        std::vector<std::thread> clients;
        for (int v = 0; v < 4; ++v)
            traces.push_back(std::string(31, 'a') + std::to_string(v));
        for (int v = 0; v < 4; ++v)
            clients.emplace_back([&, v] {
                std::string ids;
                for (int i = 0; i < 57; ++i)
                    ids += (i ? "," : "") + std::to_string(3 + (v * 13 + i * 7) % 150);
                (void)http_request(
                    s.port(), boost::beast::http::verb::post, "/v1/inference",
                    R"({"prompt":[)" + ids + R"(],"max_tokens":60,"temperature":0})", {},
                    {{"traceparent", traceparent(traces[static_cast<std::size_t>(v)].c_str(),
                                                 caller_span, "01")}});
            });
        for (auto& c : clients)
            c.join();
        bool preempted = false;
        bool recomputed = false;
        eventually(
            [&] {
                for (const auto& t : traces)
                    for (const auto& x : col.trace(t))
                        if (x.name() == "bitnet.decode")
                            for (const auto& e : x.o.at("events").as_array()) {
                                const auto n = e.as_object().at("name").as_string();
                                preempted |= n == "bitnet.preempted";
                                recomputed |= n == "bitnet.recompute";
                            }
                return preempted && recomputed;
            },
            std::chrono::seconds(20));
        CHECK(preempted);
        CHECK(recomputed);
    }
}

} // namespace bitnet::test
