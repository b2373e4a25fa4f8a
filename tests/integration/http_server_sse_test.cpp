// The HTTP server's bytes on the wire, read raw from a loopback socket: SSE framing, headers
// and chunking, in the native and OpenAI forms (the live_server of live_server.hpp).
#include "integration/live_server.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <regex>
#include <thread>

using namespace bitnet;
using namespace live_rig;
using namespace std::chrono_literals;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

/// The raw bytes of one request's response: sent with `Connection: close`, read to EOF.
std::string raw_exchange(std::uint16_t port, const std::string& target, const std::string& body) {
    net::io_context ioc;
    tcp::socket sock(ioc);
    sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    const std::string req = "POST " + target +
                            " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                            "Content-Type: application/json\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    net::write(sock, net::buffer(req));
    std::string out;
    std::array<char, 4096> buf{};
    beast::error_code ec;
    for (;;) {
        const auto n = sock.read_some(net::buffer(buf), ec);
        out.append(buf.data(), n);
        if (ec)
            break;
    }
    CHECK(ec == net::error::eof); // the server closed after the last chunk, nothing cut
    return out;
}

/// Splits a chunked body into its chunks, checking each size line against its data and the
/// terminating zero chunk; `: ping` keep-alives (timing-dependent) are dropped.
std::vector<std::string> chunks_of(const std::string& body) {
    std::vector<std::string> out;
    std::size_t at = 0;
    for (;;) {
        const auto eol = body.find("\r\n", at);
        REQUIRE(eol != std::string::npos);
        const auto size = std::stoul(body.substr(at, eol - at), nullptr, 16);
        if (size == 0) {
            CHECK(body.substr(eol) == "\r\n\r\n");
            return out;
        }
        REQUIRE(eol + 2 + size + 2 <= body.size());
        CHECK(body.substr(eol + 2 + size, 2) == "\r\n");
        auto data = body.substr(eol + 2, size);
        if (data != ": ping\n\n")
            out.push_back(std::move(data));
        at = eol + 2 + size + 2;
    }
}

/// Replaces the run-dependent parts (ids, clock values) with fixed text.
std::string normalised(std::string s) {
    for (const char* p :
         {R"((req-|chatcmpl-|cmpl-)\d+)", R"("created":\d+)", R"("timings":\{[^}]*\})"}) {
        const std::regex re(p);
        const std::string with =
            std::string(p).find("created") != std::string::npos   ? R"("created":0)"
            : std::string(p).find("timings") != std::string::npos ? R"("timings":{})"
                                                                  : "$1N";
        s = std::regex_replace(s, re, with);
    }
    // The trace context of the answer (a new trace per request).
    s = std::regex_replace(s, std::regex("traceresponse: 00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]"),
                           "traceresponse: 00-TRACE-SPAN-FLAGS");
    return s;
}

} // namespace

TEST_CASE("SSE framing byte for byte: headers, one event per chunk, native and OpenAI forms") {
    live_server s;
    // The fake model predicts last + 1 with logit 5 against 0 for the 31 others; the sampler's
    // log-softmax of that, as the server prints it.
    const float lp = static_cast<float>(5.0 - (5.0 + std::log(1.0 + 31.0 * std::exp(-5.0))));
    const auto lps = http::fixed(lp, 6);
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"
                             "X-Request-Id: req-N\r\ntraceresponse: 00-TRACE-SPAN-FLAGS\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n";
    // Headers and chunk framing checked as sent; then each event with its ids and clock
    // values replaced by fixed text.
    auto exchange = [&](const std::string& target, const std::string& body) {
        const auto raw = raw_exchange(s.port, target, body);
        const auto end = raw.find("\r\n\r\n");
        REQUIRE(end != std::string::npos);
        CHECK(normalised(raw.substr(0, end + 4)) == head);
        auto chunks = chunks_of(raw.substr(end + 4));
        for (auto& c : chunks)
            c = normalised(c);
        return chunks;
    };

    std::vector<std::string> want;
    for (int i = 0; i < 3; ++i)
        want.push_back("event: token\ndata: {\"index\":" + std::to_string(i) +
                       ",\"token_id\":" + std::to_string(i + 2) + ",\"text\":\"<" +
                       std::to_string(i + 2) + ">\",\"logprob\":" + lps + "}\n\n");
    want.push_back(
        "event: done\ndata: {\"finish_reason\":\"length\",\"usage\":{\"prompt_tokens\":1,"
        "\"completion_tokens\":3,\"total_tokens\":4,\"prompt_tokens_details\":{"
        "\"cached_tokens\":0}},\"timings\":{},"
        "\"model_version\":\"1\"}\n\n");
    CHECK(exchange("/v1/inference/stream", R"({"prompt":[1],"max_tokens":3})") == want);

    const std::string pre = R"(data: {"id":"cmpl-N","object":"text_completion","created":0,)"
                            R"("model":"tiny","system_fingerprint":"bitnet-serve","choices":[)";
    want = {
        pre + R"({"text":"<2>","index":0,"logprobs":null,"finish_reason":null}],"usage":null})"
              "\n\n",
        pre + R"({"text":"<3>","index":0,"logprobs":null,"finish_reason":null}],"usage":null})"
              "\n\n",
        pre + R"({"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"usage":null})"
              "\n\n",
        R"(data: {"id":"cmpl-N","object":"text_completion","created":0,"model":"tiny",)"
        R"("system_fingerprint":"bitnet-serve","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,)"
        R"("prompt_tokens_details":{"cached_tokens":0}}})"
        "\n\n",
        "data: [DONE]\n\n"};
    CHECK(exchange("/v1/completions", R"({"prompt":[1],"max_tokens":2,"stream":true,)"
                                      R"("stream_options":{"include_usage":true}})") == want);
}
