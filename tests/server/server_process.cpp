// The out-of-line half of server_process.hpp: the Beast client exchange and the server's start.
// Compiled once into test_server instead of instantiated (Beast's asynchronous read and write
// composed operations) in every test file that includes the header: that instantiation was most
// of each server test's compile time, under the sanitizers a minute per file.
#include "server_process.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace bitnet::test {

http_reply http_request(std::uint16_t port, boost::beast::http::verb verb,
                        const std::string& target, const std::string& body,
                        const std::string& api_key, const header_list& extra_headers,
                        std::chrono::seconds deadline) {
    namespace beast = boost::beast;
    namespace bhttp = beast::http;
    namespace net = boost::asio;
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.expires_after(deadline);
    http_reply out;
    beast::error_code ec;
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
    if (ec)
        return out;
    bhttp::request<bhttp::string_body> req{verb, target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    if (!api_key.empty())
        req.set(bhttp::field::authorization, "Bearer " + api_key);
    for (const auto& [name, value] : extra_headers)
        req.set(name, value);
    if (!body.empty()) {
        req.set(bhttp::field::content_type, "application/json");
        req.body() = body;
        req.prepare_payload();
    }
    // Asynchronous write and read: tcp_stream's deadline (expires_after) bounds only those, so a
    // server that never answers fails the test instead of hanging it.
    beast::flat_buffer buf;
    bhttp::response<bhttp::string_body> res;
    bhttp::async_write(stream, req, [&](beast::error_code wec, std::size_t) {
        if (wec) {
            ec = wec;
            return;
        }
        bhttp::async_read(stream, buf, res, [&](beast::error_code rec, std::size_t) { ec = rec; });
    });
    ioc.run();
    out.complete = !ec;
    out.status = res.result_int();
    out.body = res.body();
    out.content_type = std::string(res[bhttp::field::content_type]);
    out.retry_after = std::string(res[bhttp::field::retry_after]);
    for (const auto& f : res) {
        std::string name(f.name_string());
        for (auto& ch : name)
            ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        out.headers[name] = std::string(f.value());
    }
    return out;
}

server_process::server_process(const std::vector<std::string>& extra_args, launch_options launch) {
    model_ = dir_.file("tiny.gguf");
    auto made = run_tool("bitnet-model", "make --shape tiny --seed 1 -o " + model_);
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    log_ = dir_.file("server.log");
    std::vector<std::string> args{server_binary(), "--port", "0", "--threads", "1",
                                  "--io-threads",  "1"};
    if (launch.model_flag) {
        args.emplace_back("--model");
        args.emplace_back(model_);
    }
    if (launch.admin_open) {
        args.emplace_back("--admin-open");
        args.emplace_back("1");
    }
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
        const auto fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        if (launch.max_fds > 0) {
            const rlimit lim{launch.max_fds, launch.max_fds};
            ::setrlimit(RLIMIT_NOFILE, &lim);
        }
        exec_or_exit(args);
    }
    // The contract's ready line: "listening on HOST:PORT".
    for (int i = 0; i < 600 && port_ == 0 && alive(); ++i) {
        const auto text = log();
        if (auto at = text.find("listening on 127.0.0.1:"); at != std::string::npos)
            port_ = static_cast<std::uint16_t>(std::stoi(text.substr(at + 23)));
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE_MESSAGE(port_ != 0, log());
    const auto ready = [&] {
        return launch.ready_status ? launch.ready_status(port_) : get("/health/ready").status;
    };
    for (int i = 0; i < 600 && ready() != 200; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE_MESSAGE(ready() == 200, log());
}

} // namespace bitnet::test
