// bitnet-server as a process under hostile and careless clients: what one request, one client or
// a burst of them must never do (abort the process, stop the listener, grow memory without end,
// drop a request unanswered), each as the raw bytes such a client sends. Waits are bounded polls.
#include "server/raw_client.hpp"
#include "server/server_process.hpp"

#include <atomic>
#include <fstream>
#include <mutex>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

std::string health_request() {
    return "GET /health/live HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
}

/// Polls /health/live on fresh connections until it answers 200 (bounded): the listener works.
bool answers_health(std::uint16_t port, int tries = 40) {
    for (int i = 0; i < tries; ++i) {
        if (test::status_of(test::raw_exchange(port, health_request(), 1s)) == 200)
            return true;
        std::this_thread::sleep_for(100ms);
    }
    return false;
}

std::uint64_t rss_bytes(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
    std::uint64_t size = 0, resident = 0;
    in >> size >> resident;
    return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

/// The head of a chunked POST to /v1/tokenize with one small chunk and the last chunk; what
/// follows is the trailer section.
std::string chunked_head() {
    return "POST /v1/tokenize HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
           "Transfer-Encoding: chunked\r\n\r\nd\r\n{\"text\":\"ab\"}\r\n0\r\n";
}

std::string greedy_ids(int first, int max_tokens) {
    return R"({"prompt":[)" + std::to_string(first) + R"(,2,3],"max_tokens":)" +
           std::to_string(max_tokens) + R"(,"temperature":0})";
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

/// The value of one sample line of the Prometheus text (`name{labels} value`), 0 when absent.
double sample(const std::string& metrics, const std::string& series) {
    const auto at = metrics.find("\n" + series + " ");
    return at == std::string::npos ? 0.0 : std::stod(metrics.substr(at + series.size() + 2));
}

} // namespace

TEST_CASE("a chunked request's oversized trailer gets 431 and the process lives on") {
    test::server_process s({}, {.admin_open = false});
    // A trailer field value, then a field name, past the 64 KiB a header field can hold: the
    // parser used to throw std::length_error on the io thread (exit 134), before any auth.
    for (const std::string& trailer : {"X-Big: " + std::string(70000, 'a') + "\r\n\r\n",
                                       std::string(70000, 'N') + ": v\r\n\r\n"}) {
        const auto reply = test::raw_exchange(s.port(), chunked_head() + trailer, 5s);
        CHECK(test::status_of(reply) == 431);
        CHECK(reply.find("request_header_too_large") != std::string::npos);
        REQUIRE_MESSAGE(s.alive(), s.log());
    }
    CHECK(answers_health(s.port()));
}

TEST_CASE("trailer lines that never end are cut off at max_header_bytes, memory stays flat") {
    test::server_process s({}, {.admin_open = false});
    const auto rss_before = rss_bytes(s.pid());
    // Four clients each try to send 16 MiB of trailer lines without the final empty line; the
    // server used to buffer all of it (about 1 GB for four such clients) until the read timeout.
    const std::string line = "X-A: " + std::string(1018, 'a') + "\r\n"; // 1 KiB a line
    std::vector<std::thread> clients;
    std::atomic<int> refused{0};
    for (int c = 0; c < 4; ++c)
        clients.emplace_back([&] {
            test::raw_conn conn(s.port());
            if (!conn.ok() || !conn.send(chunked_head()))
                return;
            for (int i = 0; i < 16 * 1024; ++i)
                if (!conn.send(line))
                    break; // the server answered and stopped reading
            bool closed = false;
            if (test::status_of(conn.read_until(5s, {}, &closed)) == 431)
                ++refused;
        });
    for (auto& t : clients)
        t.join();
    CHECK(refused == 4);
    const auto rss_after = rss_bytes(s.pid());
    MESSAGE("server RSS " << rss_before / 1024 << " KiB before, " << rss_after / 1024
                          << " KiB after 4 x 16 MiB of unterminated trailers");
    CHECK(rss_after < rss_before + (16u << 20));
    CHECK(answers_health(s.port()));
}

TEST_CASE("malformed requests get 400, oversized headers 431, each with a JSON error body") {
    test::server_process s({}, {.admin_open = false});
    struct probe {
        std::string request;
        unsigned status;
    };
    const std::vector<probe> probes{
        {"GET /health/live HTTP/1.1\r\nHost: t\r\nNo colon here\r\n\r\n", 400},
        {"GET /health/live HTTP/1.1\r\nHost: t\r\nBad Name: v\r\n\r\n", 400},
        {"GET\x01 / HTTP/1.1\r\nHost: t\r\n\r\n", 400},
        {"GET /health/live HTTP/9.9x\r\nHost: t\r\n\r\n", 400},
        {"POST /v1/tokenize HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n", 400},
        {"POST /v1/tokenize HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
         400},
        {"POST /v1/tokenize HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
        {"GET /health/live HTTP/1.1\r\nHost: t\r\nX-Long: " + std::string(20000, 'v') + "\r\n\r\n",
         431},
        {"GET /" + std::string(20000, 'p') + " HTTP/1.1\r\nHost: t\r\n\r\n", 431},
    };
    for (const auto& p : probes) {
        CAPTURE(p.request.substr(0, 80));
        const auto reply = test::raw_exchange(s.port(), p.request, 5s);
        CHECK(test::status_of(reply) == p.status);
        CHECK(reply.find("Connection: close") != std::string::npos);
        CHECK(reply.find(R"({"error":{)") != std::string::npos);
    }
    REQUIRE(s.alive());
    CHECK(answers_health(s.port()));
}

TEST_CASE("Content-Type is a case-insensitive media type with optional parameters") {
    test::server_process s({}, {.admin_open = false});
    auto tokenize = [&](const std::string& ctype) {
        const std::string body = R"({"text":"ab"})";
        return test::status_of(test::raw_exchange(
            s.port(), "POST /v1/tokenize HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                      "Content-Type: " +
                          ctype + "\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\n\r\n" + body));
    };
    CHECK(tokenize("application/json") == 200);
    CHECK(tokenize("APPLICATION/JSON") == 200);
    CHECK(tokenize("Application/Json; charset=UTF-8") == 200);
    CHECK(tokenize("text/plain") == 415);
    CHECK(tokenize("application/jsonp") == 415);
}

TEST_CASE("running out of descriptors pauses the listener; once they are back it serves again") {
    // 256 descriptors for the whole server: 300 idle connections exhaust them, so accept fails
    // with EMFILE. The acceptor used to give up for good at the first error.
    test::server_process s({}, {.admin_open = false, .max_fds = 256}); // max_connections: 1024
    {
        std::vector<test::raw_conn> idle;
        for (int i = 0; i < 300; ++i)
            idle.emplace_back(s.port());
        for (int i = 0; i < 100 && s.log().find("accept failed") == std::string::npos; ++i)
            std::this_thread::sleep_for(50ms);
        CHECK(s.log().find("accept failed") != std::string::npos);
    } // every client connection closes here
    CHECK(answers_health(s.port(), 100));
    CHECK(s.alive());
}

TEST_CASE("past max_connections a connection gets 503 with Retry-After; after one closes, 200") {
    test::server_process s({"--max-connections", "4"}, {.admin_open = false});
    std::vector<test::raw_conn> idle;
    for (int i = 0; i < 4; ++i)
        idle.emplace_back(s.port());
    // Accepted in order: a fifth is past the cap once the four are taken (bounded wait).
    std::string over;
    for (int i = 0; i < 50 && test::status_of(over) != 503; ++i) {
        over = test::raw_exchange(s.port(), health_request(), 2s);
        if (test::status_of(over) != 503)
            std::this_thread::sleep_for(20ms);
    }
    CHECK(test::status_of(over) == 503);
    CHECK(over.find("Retry-After: 1") != std::string::npos);
    CHECK(over.find("too_many_connections") != std::string::npos);
    idle.pop_back();
    CHECK(answers_health(s.port()));
    CHECK(test::parse_object(s.get("/v1/stats").body)
              .at("rejects")
              .as_object()
              .at("too_many_connections")
              .as_int64() >= 1);
}

TEST_CASE("admin routes need an admin key: an inference key never unloads a model") {
    SUBCASE("--api-key alone: admin routes answer 403 for any key") {
        test::server_process s({"--api-key", "user-key-123"}, {.admin_open = false});
        auto del = test::http_request(s.port(), boost::beast::http::verb::delete_,
                                      "/v1/models/tiny", {}, "user-key-123");
        CHECK(del.status == 403);
        CHECK(test::parse_object(del.body).at("error").as_object().at("message").as_string().find(
                  "no admin key") != std::string::npos);
        auto load = s.post("/v1/models/load", R"({"alias":"x","path":"/nonexistent.gguf"})",
                           "user-key-123");
        CHECK(load.status == 403);
        // The model still serves.
        CHECK(s.post("/v1/inference", greedy_ids(1, 2), "user-key-123").status == 200);
        CHECK(s.get("/health/ready").status == 200);
    }
    SUBCASE("no keys at all: admin routes answer 403") {
        test::server_process s({}, {.admin_open = false});
        CHECK(s.del("/v1/models/tiny").status == 403);
        CHECK(s.post("/v1/models/tiny/rollback", "").status == 403);
        CHECK(s.get("/health/ready").status == 200);
    }
    SUBCASE("admin_open opts in to open model management") {
        test::server_process s({}, {.admin_open = true});
        CHECK(s.del("/v1/models/tiny").status == 202);
    }
}

TEST_CASE("20 bursts of 64 concurrent streams on fresh connections: every one answered, logged") {
    // Two io threads and two CAF threads: the shipped defaults, as the drops were seen with.
    test::server_process s(
        {"--max-waiting", "256", "--io-threads", "2", "--caf-threads", "2", "--log-level", "debug"},
        {.admin_open = false});
    const std::string body =
        R"({"prompt":"Once upon a time","max_tokens":24,"temperature":0,"stream":true})";
    const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: t\r\n"
                                "Content-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    int answered = 0, unanswered = 0;
    std::string first_unanswered;
    for (int burst = 0; burst < 20; ++burst) {
        std::vector<std::string> replies(64);
        std::vector<std::thread> clients;
        for (int c = 0; c < 64; ++c)
            clients.emplace_back([&, c] {
                test::raw_conn conn(s.port());
                if (conn.ok() && conn.send(request))
                    replies[c] = conn.read_until(60s, "data: [DONE]\n\n");
            });
        for (auto& t : clients)
            t.join();
        for (const auto& r : replies) {
            if (test::status_of(r) == 200 && r.find("data: [DONE]") != std::string::npos)
                ++answered;
            else if (unanswered++ == 0)
                first_unanswered = r.substr(0, 200);
        }
    }
    CHECK_MESSAGE(unanswered == 0, "first unanswered reply: '" << first_unanswered << "'");
    CHECK(answered == 20 * 64);
    // Every request has its line in the request log.
    for (int i = 0; i < 100 && count_of(s.log(), "/v1/completions stream 200") < 20 * 64; ++i)
        std::this_thread::sleep_for(50ms);
    CHECK(count_of(s.log(), "/v1/completions stream 200") == 20 * 64);
    // The cause of the drops this guards against: a readiness event left over from the read of
    // the request, once taken for the client's FIN (debug lines count how often it came).
    MESSAGE("stale readiness events survived: " << count_of(s.log(), "stale readiness event"));
}

TEST_CASE("during a drain the listener still answers: readiness 503, new work 503 + Retry-After") {
    // One sequence at a time and four long generations: the drain lasts while they run.
    test::server_process s({"--max-seqs", "1", "--drain-timeout-ms", "60000"},
                           {.admin_open = false});
    std::vector<std::thread> long_runs;
    for (int i = 0; i < 4; ++i)
        long_runs.emplace_back([&, i] { (void)s.post("/v1/inference", greedy_ids(i + 1, 2000)); });
    for (int i = 0; i < 400 && s.get("/v1/stats").body.find("\"running\":1") == std::string::npos;
         ++i)
        std::this_thread::sleep_for(5ms);
    ::kill(s.pid(), SIGTERM);
    for (int i = 0; i < 200 && s.log().find("draining") == std::string::npos; ++i)
        std::this_thread::sleep_for(5ms);
    auto ready = s.get("/health/ready");
    CHECK(ready.status == 503);
    auto work = s.post("/v1/inference", greedy_ids(7, 2));
    CHECK(work.status == 503);
    CHECK(!work.retry_after.empty());
    CHECK(test::parse_object(work.body).at("error").as_object().at("code").as_string() ==
          "draining");
    CHECK(s.signal_and_wait(SIGKILL) == -1);
    for (auto& t : long_runs)
        t.join();
}

TEST_CASE("a request its client abandons is counted (499) and logged") {
    test::server_process s({}, {.admin_open = false});
    {
        test::raw_conn conn(s.port());
        const std::string body = greedy_ids(1, 2000);
        REQUIRE(conn.send("POST /v1/inference/stream HTTP/1.1\r\nHost: t\r\nContent-Type: "
                          "application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body));
        REQUIRE(conn.read_until(10s, "event: token").find("event: token") != std::string::npos);
    } // gone mid-stream
    const std::string series =
        R"(bitnet_requests_total{route="/v1/inference/stream",status="499"})";
    double n = 0;
    for (int i = 0; i < 200 && (n = sample(s.get("/metrics").body, series)) < 1; ++i)
        std::this_thread::sleep_for(10ms);
    CHECK(n == 1);
    CHECK(s.log().find("/v1/inference/stream stream 499 client_closed") != std::string::npos);
}

TEST_CASE("requests for unknown paths share one metrics series: no client text in labels") {
    test::server_process s({}, {.admin_open = false});
    for (int i = 0; i < 200; ++i)
        CHECK(s.get("/v1/no-such-route-" + std::to_string(i)).status == 404);
    const auto metrics = s.get("/metrics").body;
    CHECK(metrics.find("no-such-route") == std::string::npos);
    CHECK(sample(metrics, R"(bitnet_requests_total{route="unmatched",status="404"})") == 200);
}
