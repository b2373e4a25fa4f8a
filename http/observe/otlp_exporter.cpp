#include "http/observe/otlp_exporter.hpp"

#include "common/otlp_proto.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include <openssl/ssl.h>

namespace bitnet::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = net::ip::tcp;

result<otlp_target> parse_otlp_endpoint(const std::string& url) {
    otlp_target t;
    std::string rest;
    if (url.rfind("http://", 0) == 0) {
        rest = url.substr(7);
    } else if (url.rfind("https://", 0) == 0) {
        t.tls = true;
        rest = url.substr(8);
    } else {
        return error{errc::invalid_argument,
                     "otlp_endpoint '" + url + "' must start with http:// or https://",
                     "otlp_endpoint"};
    }
    const auto slash = rest.find('/');
    auto authority = rest.substr(0, slash);
    std::string path = slash == std::string::npos ? "" : rest.substr(slash);
    if (authority.empty())
        return error{errc::invalid_argument, "otlp_endpoint '" + url + "' names no host",
                     "otlp_endpoint"};
    if (authority.front() == '[') { // [IPv6]:port
        const auto close = authority.find(']');
        if (close == std::string::npos)
            return error{errc::invalid_argument, "otlp_endpoint '" + url + "': unclosed '['",
                         "otlp_endpoint"};
        t.host = authority.substr(1, close - 1);
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':')
                return error{errc::invalid_argument, "otlp_endpoint '" + url + "': bad port",
                             "otlp_endpoint"};
            t.port = authority.substr(close + 2);
        }
    } else if (const auto colon = authority.rfind(':'); colon != std::string::npos) {
        t.host = authority.substr(0, colon);
        t.port = authority.substr(colon + 1);
    } else {
        t.host = authority;
    }
    if (t.port.empty())
        t.port = t.tls ? "443" : "4318"; // OTLP/HTTP's default port when none is given
    if (t.host.empty() || !std::all_of(t.port.begin(), t.port.end(), ::isdigit) ||
        t.port.size() > 5 || std::stoul(t.port) == 0 || std::stoul(t.port) > 65535)
        return error{errc::invalid_argument, "otlp_endpoint '" + url + "': bad host or port",
                     "otlp_endpoint"};
    // As OTEL_EXPORTER_OTLP_ENDPOINT: a base URL gets the signal's path appended; a URL that
    // already ends with it is used as it is.
    const std::string signal = "/v1/traces";
    while (!path.empty() && path.back() == '/')
        path.pop_back();
    if (path.size() < signal.size() ||
        path.compare(path.size() - signal.size(), signal.size(), signal) != 0)
        path += signal;
    t.path = path;
    return t;
}

result<std::vector<std::pair<std::string, std::string>>>
parse_otlp_headers(const std::vector<std::string>& items) {
    std::vector<std::pair<std::string, std::string>> out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        const auto& it = items[i];
        const auto eq = it.find('=');
        // The item is not quoted: it may be a credential that lost its name.
        if (eq == std::string::npos || eq == 0)
            return error{errc::invalid_argument,
                         "otlp_headers item " + std::to_string(i + 1) +
                             " is not name=value (e.g. authorization=Bearer ...)",
                         "otlp_headers"};
        auto name = it.substr(0, eq);
        auto value = it.substr(eq + 1);
        const auto bad = [](char c) { return c == '\r' || c == '\n' || c == '\0'; };
        if (std::any_of(name.begin(), name.end(),
                        [](char c) {
                            return !(std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
                                     c == '_');
                        }) ||
            std::any_of(value.begin(), value.end(), bad))
            return error{errc::invalid_argument,
                         "otlp_headers item '" + name.substr(0, 64) +
                             "': a header name is letters, digits, '-' and '_', and a value "
                             "holds no line break",
                         "otlp_headers"};
        out.emplace_back(std::move(name), std::move(value));
    }
    return out;
}

otlp_exporter::otlp_exporter(otlp_options opt)
    : opt_(std::move(opt)) {
    target_ = parse_otlp_endpoint(opt_.endpoint).value();
    thread_ = std::thread([this] { run(); });
}

otlp_exporter::~otlp_exporter() {
    trace::recorder::process().stop();
    if (thread_.joinable())
        thread_.join();
}

namespace {

/// One request/response exchange on an open stream, under the stream's expiry (async operations
/// driven by a private io_context, so the timeout holds for every step).
template <class Stream>
unsigned exchange(net::io_context& io, Stream& s, bhttp::request<bhttp::string_body>& req) {
    beast::flat_buffer buf;
    bhttp::response<bhttp::string_body> res;
    beast::error_code ec;
    bhttp::async_write(s, req, [&](beast::error_code e, std::size_t) {
        ec = e;
        if (!e)
            bhttp::async_read(s, buf, res, [&](beast::error_code e2, std::size_t) { ec = e2; });
    });
    io.run();
    io.restart();
    return ec ? 0u : res.result_int();
}

} // namespace

unsigned otlp_exporter::post(const std::string& body) {
    net::io_context io;
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, target_.path, 11};
    req.set(bhttp::field::host, target_.host + ":" + target_.port);
    req.set(bhttp::field::content_type, "application/x-protobuf");
    req.set(bhttp::field::user_agent, "bitnet-serve-otlp");
    for (const auto& [k, v] : opt_.headers)
        req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    try {
        tcp::resolver resolver(io);
        beast::error_code ec;
        const auto found = resolver.resolve(target_.host, target_.port, ec);
        if (ec)
            return 0;
        if (!target_.tls) {
            beast::tcp_stream s(io);
            s.expires_after(opt_.timeout);
            s.async_connect(found, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
            io.run();
            io.restart();
            if (ec)
                return 0;
            return exchange(io, s, req);
        }
        net::ssl::context ctx(net::ssl::context::tls_client);
        ctx.set_default_verify_paths();
        ctx.set_verify_mode(net::ssl::verify_peer);
        beast::ssl_stream<beast::tcp_stream> s(io, ctx);
        if (!SSL_set_tlsext_host_name(s.native_handle(), target_.host.c_str()))
            return 0;
        s.set_verify_callback(net::ssl::host_name_verification(target_.host));
        beast::get_lowest_layer(s).expires_after(opt_.timeout);
        beast::get_lowest_layer(s).async_connect(
            found, [&](beast::error_code e, const tcp::endpoint&) {
                ec = e;
                if (!e)
                    s.async_handshake(net::ssl::stream_base::client,
                                      [&](beast::error_code e2) { ec = e2; });
            });
        io.run();
        io.restart();
        if (ec)
            return 0;
        return exchange(io, s, req);
    } catch (const std::exception&) {
        return 0; // a resolver or TLS set-up failure is a failed attempt like any other
    }
}

void otlp_exporter::run() {
    auto& rec = trace::recorder::process();
    std::mt19937 jitter{std::random_device{}()};
    auto last_warned = std::chrono::steady_clock::time_point{};
    for (;;) {
        auto batch = rec.take(opt_.batch_spans, opt_.flush_every);
        if (batch.empty()) {
            if (rec.stopped())
                return;
            continue;
        }
        const auto body =
            trace::encode_export_request(batch, opt_.resource, "bitnet-serve", opt_.scope_version);
        // After stop, one attempt: shutdown must not wait through backoffs.
        const std::uint32_t attempts = rec.stopped() ? 1 : std::max(opt_.max_attempts, 1u);
        unsigned status = 0;
        for (std::uint32_t a = 0; a < attempts; ++a) {
            status = post(body);
            // Retry what OTLP calls retryable: no answer, 429, 502, 503, 504.
            const bool retry =
                status == 0 || status == 429 || status == 502 || status == 503 || status == 504;
            if (!retry || a + 1 == attempts)
                break;
            // Backoff 250 ms, 500 ms, 1 s, ... capped at 5 s, with +-20 % jitter; cut short by
            // stop.
            auto wait = std::min(250.0 * static_cast<double>(1u << std::min(a, 5u)), 5000.0);
            wait *= std::uniform_real_distribution<double>(0.8, 1.2)(jitter);
            if (rec.wait_stopped(std::chrono::milliseconds(static_cast<long>(wait))))
                break;
        }
        if (status >= 200 && status < 300) {
            rec.count_exported(batch.size());
            continue;
        }
        rec.count_dropped(batch.size());
        const auto now = std::chrono::steady_clock::now();
        if (last_warned == std::chrono::steady_clock::time_point{} ||
            now - last_warned > std::chrono::seconds(60)) {
            last_warned = now;
            spdlog::warn("tracing: {} span(s) dropped: the OTLP endpoint {} {} (further failures "
                         "are counted in bitnet_trace_spans_dropped_total, logged once a minute)",
                         batch.size(), opt_.endpoint,
                         status == 0 ? std::string("did not answer")
                                     : "answered HTTP " + std::to_string(status));
        }
    }
}

} // namespace bitnet::http
