// HTTPS on the real bitnet-server (--tls-cert/--tls-key), with certificates the openssl command
// makes at test time (deploy/cluster/make-certs.sh): curl with the CA gets the routes, SSE
// streams over TLS, plain HTTP to the TLS port is refused cleanly, TLS below 1.2 is refused, a
// client that says nothing is dropped, SIGHUP swaps the certificate for new connections while an
// open stream carries on (and never ends the process, TLS or not), a bad pair is a startup
// config error, and HTTPS and the cluster's TLS live in one process without disturbing each
// other's OpenSSL error queues.
#include "server/certs.hpp"
#include "server/cluster_process.hpp"
#include "server/raw_client.hpp"
#include "server/tls_client.hpp"

#include <boost/json.hpp>

#include <filesystem>
#include <memory>

using namespace bitnet;
using namespace bitnet::test;

namespace {

namespace bhttp = boost::beast::http;

/// A CA and a server pair (SANs localhost and 127.0.0.1) made by make-certs.sh in `dir`/`name`.
struct cert_set {
    std::string dir, ca, cert, key;
};

cert_set make_server_certs(const scratch_dir& d, const std::string& name) {
    cert_set c;
    c.dir = d.file(name);
    make_certs(c.dir, "server");
    c.ca = c.dir + "/ca.crt";
    c.cert = c.dir + "/server.crt";
    c.key = c.dir + "/server.key";
    return c;
}

/// bitnet-server serving HTTPS with `cert`/`key`, ready once GET /health/ready over TLS (checked
/// against `ca`) answers 200.
std::unique_ptr<server_process> https_server(const std::string& ca, const std::string& cert,
                                             const std::string& key,
                                             std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--tls-cert", cert, "--tls-key", key};
    args.insert(args.end(), extra.begin(), extra.end());
    launch_options lo;
    lo.ready_status = [ca](std::uint16_t port) {
        return https_get(port, ca, "/health/ready").status;
    };
    return std::make_unique<server_process>(args, lo);
}

/// A shell command's exit status and standard output.
struct shell_result {
    int exit_code = -1;
    std::string out;
};

shell_result shell(const std::string& cmd) {
    scratch_dir d;
    const auto out = d.file("out");
    const int status = std::system((cmd + " >'" + out + "' 2>&1").c_str());
    shell_result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const auto b = read_file(out);
    r.out.assign(b.begin(), b.end());
    return r;
}

std::string url(std::uint16_t port, const std::string& path) {
    return "https://localhost:" + std::to_string(port) + path;
}

const std::string k_completion = R"({"prompt":"Once upon","max_tokens":6,"temperature":0})";

} // namespace

TEST_CASE("https: curl with the CA gets /health/live and a completion over TLS 1.2 or later, "
          "without the CA it refuses the certificate") {
    scratch_dir d;
    const auto c = make_server_certs(d, "ca");
    auto s = https_server(c.ca, c.cert, c.key);
    CHECK(s->log().find("(HTTPS)") != std::string::npos);

    const auto live =
        shell("curl -sS --max-time 30 --cacert '" + c.ca + "' " + url(s->port(), "/health/live"));
    CHECK_MESSAGE(live.exit_code == 0, live.out);
    CHECK(live.out.find(R"("status":"ok")") != std::string::npos);

    const auto done = shell("curl -sS --max-time 30 --cacert '" + c.ca +
                            "' -H 'Content-Type: application/json' -d '" + k_completion + "' " +
                            url(s->port(), "/v1/completions"));
    REQUIRE_MESSAGE(done.exit_code == 0, done.out);
    const auto o = parse_object(done.out);
    CHECK(o.at("object").as_string() == "text_completion");
    CHECK(o.at("usage").at("completion_tokens").as_int64() > 0);

    // Verification is real: curl without our CA does not trust the server.
    const auto untrusted = shell("curl -sS --max-time 30 " + url(s->port(), "/health/live"));
    CHECK(untrusted.exit_code == 60); // CURLE_PEER_FAILED_VERIFICATION

    tls_client client(s->port(), {.ca_file = c.ca});
    REQUIRE_MESSAGE(client.ok(), client.error());
    CHECK(client.version_number() >= TLS1_2_VERSION);
    // Keep-alive over TLS: several requests on one connection.
    for (int i = 0; i < 3; ++i)
        CHECK(client.request(bhttp::verb::get, "/health/live").status == 200);
}

TEST_CASE("https: SSE streams over TLS: curl -N gets every chunk and [DONE], the native stream "
          "every token event and its done event") {
    scratch_dir d;
    const auto c = make_server_certs(d, "ca");
    auto s = https_server(c.ca, c.cert, c.key);

    const std::string streamed = R"({"prompt":"Once upon","max_tokens":6,"stream":true})";
    const auto sse = shell("curl -sS -N --max-time 30 --cacert '" + c.ca +
                           "' -H 'Content-Type: application/json' -d '" + streamed + "' " +
                           url(s->port(), "/v1/completions"));
    REQUIRE_MESSAGE(sse.exit_code == 0, sse.out);
    const auto done_at = sse.out.find("data: [DONE]");
    REQUIRE_MESSAGE(done_at != std::string::npos, sse.out);
    CHECK(sse.out.find("data: ", done_at + 1) == std::string::npos); // [DONE] is the last
    CHECK(sse.out.find(R"("finish_reason":"length")") != std::string::npos);

    tls_client client(s->port(), {.ca_file = c.ca});
    REQUIRE_MESSAGE(client.ok(), client.error());
    const auto r = client.request(bhttp::verb::post, "/v1/inference/stream",
                                  R"({"prompt":"Once upon","max_tokens":6,"temperature":0})");
    REQUIRE(r.status == 200);
    CHECK(r.complete);
    CHECK(r.content_type == "text/event-stream");
    const auto events = sse_events(r.body);
    REQUIRE_FALSE(events.empty());
    CHECK(events.back().first == "done");
    const auto done = parse_object(events.back().second);
    std::size_t tokens = 0;
    for (const auto& [ev, data] : events)
        tokens += ev == "token" && data.find(R"("token_id":null)") == std::string::npos ? 1 : 0;
    CHECK(tokens == static_cast<std::size_t>(done.at("usage").at("completion_tokens").as_int64()));
    // The same connection serves the next request after the stream.
    CHECK(client.request(bhttp::verb::get, "/health/live").status == 200);
}

TEST_CASE("https: plain HTTP to the TLS port gets a 400 https_required in plain HTTP and the "
          "connection closes, a client that says nothing is dropped at the read timeout") {
    scratch_dir d;
    const auto c = make_server_certs(d, "ca");
    auto s = https_server(c.ca, c.cert, c.key, {"--read-timeout-ms", "1000"});

    raw_conn plain(s->port());
    REQUIRE(plain.ok());
    plain.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n");
    bool closed = false;
    const auto answer = plain.read_until(std::chrono::seconds(20), {}, &closed);
    CHECK(status_of(answer) == 400);
    CHECK(answer.find(R"("code":"https_required")") != std::string::npos);
    CHECK(answer.find("Connection: close") != std::string::npos);
    CHECK(closed);

    // Connected, silent: neither a TLS hello nor HTTP ever comes. The server must not keep the
    // slot: it closes without a word once the read timeout passes.
    raw_conn silent(s->port());
    REQUIRE(silent.ok());
    bool silent_closed = false;
    const auto nothing = silent.read_until(std::chrono::seconds(20), {}, &silent_closed);
    CHECK(silent_closed);
    CHECK(nothing.empty());

    // A TLS record header and then silence (a stalled handshake): dropped the same way.
    raw_conn stalled(s->port());
    REQUIRE(stalled.ok());
    stalled.send(std::string("\x16\x03\x01\x02\x00", 5));
    bool stalled_closed = false;
    stalled.read_until(std::chrono::seconds(20), {}, &stalled_closed);
    CHECK(stalled_closed);

    CHECK(s->alive());
    CHECK(https_get(s->port(), c.ca, "/health/live").status == 200);
}

TEST_CASE("https: a client that offers at most TLS 1.1 is refused by the server, and counted") {
    scratch_dir d;
    const auto c = make_server_certs(d, "ca");
    auto s = https_server(c.ca, c.cert, c.key);

    tls_client old(s->port(), {.ca_file = c.ca, .max_version = TLS1_1_VERSION});
    CHECK_FALSE(old.ok());
    // The server's alert, not the client's own refusal to offer the version.
    CHECK_MESSAGE(old.error().find("protocol version") != std::string::npos, old.error());

    const auto m = https_get(s->port(), c.ca, "/metrics");
    REQUIRE(m.status == 200);
    CHECK(sample(m.body, "bitnet_tls_handshake_failures_total") >= 1);
    CHECK(https_get(s->port(), c.ca, "/health/live").status == 200);
}

TEST_CASE("https: a client that leaves is cancelled and counted as 499: mid-stream, and with "
          "close_notify then FIN while its plain reply is generated") {
    scratch_dir d;
    const auto c = make_server_certs(d, "ca");
    auto s = https_server(c.ca, c.cert, c.key);
    // 2,000 tokens: long enough that the client is gone before the reply is done.
    const std::string long_run = R"({"prompt":[1,2,3],"max_tokens":2000,"temperature":0})";
    {
        tls_client streaming(s->port(), {.ca_file = c.ca});
        REQUIRE_MESSAGE(streaming.ok(), streaming.error());
        REQUIRE(streaming.send(bhttp::verb::post, "/v1/inference/stream", long_run));
        REQUIRE(streaming.read_head() == 200);
        REQUIRE(streaming.read_until("event: token").find("event: token") != std::string::npos);
    } // gone mid-stream
    const auto abandoned = [&](const std::string& route) {
        return sample(https_get(s->port(), c.ca, "/metrics").body,
                      R"(bitnet_requests_total{route=")" + route + R"(",status="499"})");
    };
    CHECK_MESSAGE(eventually([&] { return abandoned("/v1/inference/stream") == 1; }), s->log());

    // A plain request: nothing reads its connection while the reply is generated, so only the
    // disconnect watch can notice the client leave. Under TLS a polite client's close_notify
    // arrives before its FIN: readable data that is not a request.
    tls_client plain(s->port(), {.ca_file = c.ca});
    REQUIRE_MESSAGE(plain.ok(), plain.error());
    REQUIRE(plain.send(bhttp::verb::post, "/v1/inference", long_run));
    REQUIRE(eventually([&] {
        return sample(https_get(s->port(), c.ca, "/metrics").body, "bitnet_requests_running") >= 1;
    }));
    plain.hang_up();
    CHECK_MESSAGE(eventually([&] { return abandoned("/v1/inference") == 1; }), s->log());
}

TEST_CASE("https: SIGHUP re-reads the certificate for new connections, a stream opened before "
          "goes on to its end on its connection, a bad file keeps the old pair") {
    scratch_dir d;
    const auto first = make_server_certs(d, "ca-one");
    const auto second = make_server_certs(d, "ca-two");
    // The server reads these paths; the test replaces their contents.
    const auto cert = d.file("server.crt"), key = d.file("server.key");
    const auto put = [&](const cert_set& from) {
        std::filesystem::copy_file(from.cert, cert,
                                   std::filesystem::copy_options::overwrite_existing);
        std::filesystem::copy_file(from.key, key,
                                   std::filesystem::copy_options::overwrite_existing);
    };
    put(first);
    auto s = https_server(first.ca, cert, key);

    // A stream opened under the first certificate: its head and first event arrive before the
    // reload, the rest after.
    tls_client before(s->port(), {.ca_file = first.ca});
    REQUIRE_MESSAGE(before.ok(), before.error());
    REQUIRE(before.send(bhttp::verb::post, "/v1/inference/stream",
                        R"({"prompt":"Once upon","max_tokens":12,"temperature":0})"));
    REQUIRE(before.read_head() == 200);
    CHECK(before.read_until("event: token").find("event: token") != std::string::npos);

    put(second);
    ::kill(s->pid(), SIGHUP);
    // Counted once the reload is done (the new pair is in use from then on).
    const auto reloads = [&](const std::string& result, const std::string& ca) {
        return sample(https_get(s->port(), ca, "/metrics").body,
                      R"(bitnet_tls_reloads_total{result=")" + result + R"("})");
    };
    REQUIRE_MESSAGE(eventually([&] { return reloads("ok", second.ca) == 1; }), s->log());
    CHECK(s->alive());

    // New connections: the second CA verifies them, the first no longer does.
    tls_client fresh(s->port(), {.ca_file = second.ca});
    CHECK_MESSAGE(fresh.ok(), fresh.error());
    CHECK(fresh.request(bhttp::verb::get, "/health/live").status == 200);
    tls_client stale(s->port(), {.ca_file = first.ca});
    CHECK_FALSE(stale.ok());

    // The stream opened before the reload ends properly, and its connection serves on.
    const auto rest = before.read_rest();
    CHECK(rest.complete);
    const auto events = sse_events(rest.body);
    REQUIRE_FALSE(events.empty());
    CHECK(events.back().first == "done");
    CHECK(before.request(bhttp::verb::get, "/health/live").status == 200);

    // A key file that is not a key: the reload fails, says so, and the second pair serves on.
    write_file(key, {'n', 'o', 't', ' ', 'a', ' ', 'k', 'e', 'y'});
    ::kill(s->pid(), SIGHUP);
    REQUIRE_MESSAGE(eventually([&] { return reloads("failed", second.ca) == 1; }), s->log());
    CHECK(s->alive());
    tls_client after_bad(s->port(), {.ca_file = second.ca});
    CHECK_MESSAGE(after_bad.ok(), after_bad.error());
    const auto m = after_bad.request(bhttp::verb::get, "/metrics");
    CHECK(sample(m.body, R"(bitnet_tls_reloads_total{result="ok"})") == 1);
    CHECK(sample(m.body, R"(bitnet_tls_reloads_total{result="failed"})") == 1);
}

TEST_CASE("https: SIGHUP never ends a plain-HTTP server either") {
    server_process s;
    ::kill(s.pid(), SIGHUP);
    REQUIRE(eventually([&] { return s.log().find("SIGHUP: plain HTTP") != std::string::npos; }));
    CHECK(s.alive());
    CHECK(s.get("/health/live").status == 200);
}

TEST_CASE("https: a certificate and a key that do not belong together, or a file that is not "
          "PEM, is a startup config error (exit 2) that names the key") {
    scratch_dir d;
    const auto c = make_server_certs(d, "ca");
    make_certs(c.dir, "other");
    const auto other_key = c.dir + "/other.key";
    const auto mismatch =
        run_tool("bitnet-server",
                 "--port 0 --tls-cert '" + c.cert + "' --tls-key '" + other_key + "'", "", 60);
    CHECK(mismatch.exit_code == 2);
    CHECK_MESSAGE(mismatch.err.find("does not belong to tls_cert") != std::string::npos,
                  mismatch.err);

    const auto not_pem = d.file("garbage.crt");
    write_file(not_pem, {'x', 'y', 'z'});
    const auto garbage = run_tool(
        "bitnet-server", "--port 0 --tls-cert '" + not_pem + "' --tls-key '" + c.key + "'", "", 60);
    CHECK(garbage.exit_code == 2);
    CHECK_MESSAGE(garbage.err.find("tls_cert") != std::string::npos, garbage.err);

    const auto half = run_tool("bitnet-server", "--port 0 --tls-cert '" + c.cert + "'", "", 60);
    CHECK(half.exit_code == 2);
    CHECK(half.err.find("'tls_key'") != std::string::npos);
}

TEST_CASE("https: HTTPS and the cluster's TLS in one process: failed HTTPS handshakes are the "
          "HTTP listener's (never counted as cluster refusals) and a refused peer is still "
          "counted as the cluster's") {
    scratch_dir d;
    const auto c = make_server_certs(d, "ca");
    make_certs(c.dir, "a");
    const auto other = d.file("other-ca");
    make_certs(other, "intruder");
    const auto model = d.file("tiny.gguf");
    const auto made = run_tool("bitnet-model", "make --shape tiny --seed 1 -o " + model);
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);

    cluster_node a("a",
                   {"--cluster-listen", "127.0.0.1:0", "--cluster-cert", c.dir + "/a.crt",
                    "--cluster-key", c.dir + "/a.key", "--cluster-ca", c.ca, "--tls-cert", c.cert,
                    "--tls-key", c.key, "--model", model, "--threads", "1"},
                   "", d.file("a.log"));
    REQUIRE(eventually([&] { return https_get(a.port(), c.ca, "/health/ready").status == 200; }));

    // HTTPS handshakes that fail on the server's side (an SSL_ERROR_SSL in asio's engine): a
    // client that does not trust the server, one that offers only TLS 1.1.
    const auto handshake_failures = [&] {
        return sample(https_get(a.port(), c.ca, "/metrics").body,
                      "bitnet_tls_handshake_failures_total");
    };
    const auto cluster_tls_refusals = [&] {
        return sample(https_get(a.port(), c.ca, "/metrics").body,
                      R"(bitnet_cluster_refusals_total{node="a",reason="tls"})");
    };
    const auto failures_before = handshake_failures();
    tls_client untrusting(a.port(), {.ca_file = d.file("other-ca/ca.crt")});
    CHECK_FALSE(untrusting.ok());
    tls_client old(a.port(), {.ca_file = c.ca, .max_version = TLS1_1_VERSION});
    CHECK_FALSE(old.ok());
    CHECK(eventually([&] { return handshake_failures() >= failures_before + 2; }));
    CHECK(cluster_tls_refusals() == 0);
    CHECK(https_get(a.port(), c.ca, "/health/live").status == 200);

    // A peer whose certificate another CA signed dials a's cluster port: CAF's refusal is still
    // the interposer's to log and count, and HTTPS is untouched by it.
    cluster_node intruder("intruder",
                          {"--cluster-listen", "127.0.0.1:0", "--cluster-cert",
                           other + "/intruder.crt", "--cluster-key", other + "/intruder.key",
                           "--cluster-ca", other + "/ca.crt", "--join", a.cluster_address(),
                           "--threads", "1"},
                          "", d.file("intruder.log"));
    const auto https_failures = handshake_failures();
    CHECK_MESSAGE(eventually([&] { return cluster_tls_refusals() >= 1; }), a.log());
    CHECK(handshake_failures() == https_failures);
    tls_client after(a.port(), {.ca_file = c.ca});
    REQUIRE_MESSAGE(after.ok(), after.error());
    const auto r = after.request(bhttp::verb::post, "/v1/completions", k_completion);
    CHECK_MESSAGE(r.status == 200, r.body);
    CHECK(a.alive());
}
