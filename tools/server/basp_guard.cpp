#include "basp_guard.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include <array>
#include <functional>
#include <thread>

namespace bitnet::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// CAF 0.17's BASP header: operation (1 byte), two padding bytes, flags, the payload length (4
// bytes, network order), operation data (8), source and destination actor ids (8 + 8).
constexpr std::size_t header_bytes = 32;
constexpr unsigned char client_handshake = 0x01;

} // namespace

bool basp_header_check::feed(const unsigned char* data, std::size_t n) {
    while (n > 0) {
        if (payload_left_ > 0) {
            const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, n));
            payload_left_ -= take;
            data += take;
            n -= take;
            if (payload_left_ == 0 && in_handshake_)
                handshaken_ = true;
            continue;
        }
        const auto take = std::min(header_bytes - header_have_, n);
        std::copy(data, data + take, header_ + header_have_);
        header_have_ += take;
        data += take;
        n -= take;
        if (header_have_ < header_bytes)
            break;
        header_have_ = 0;
        const std::uint32_t len = (std::uint32_t{header_[4]} << 24) |
                                  (std::uint32_t{header_[5]} << 16) |
                                  (std::uint32_t{header_[6]} << 8) | std::uint32_t{header_[7]};
        const auto limit = handshaken_ ? limits_.message_bytes : limits_.handshake_bytes;
        if (len > limit) {
            why_ = "a BASP header announces a payload of " + std::to_string(len) + " bytes " +
                   (handshaken_ ? "(limit " : "before the handshake (limit ") +
                   std::to_string(limit) + ")";
            return false;
        }
        in_handshake_ = !handshaken_ && header_[0] == client_handshake;
        payload_left_ = len;
        if (len == 0 && in_handshake_)
            handshaken_ = true;
    }
    return true;
}

namespace {

/// One peer connection: the peer's socket and the middleman's, bytes pumped both ways; the
/// peer's bytes only after their headers passed the check.
class relay : public std::enable_shared_from_this<relay> {
public:
    relay(tcp::socket peer, asio::io_context& io, basp_guard_limits limits,
          const std::function<void()>& on_refused)
        : peer_(std::move(peer))
        , upstream_(io)
        , check_(limits)
        , on_refused_(on_refused) {}

    void start(const tcp::endpoint& upstream) {
        boost::system::error_code ec;
        auto remote = peer_.remote_endpoint(ec);
        from_ = ec ? std::string("?")
                   : remote.address().to_string() + ":" + std::to_string(remote.port());
        upstream_.async_connect(upstream, [self = shared_from_this()](auto err) {
            if (err)
                return self->close();
            self->pump_in();
            self->pump_out();
        });
    }

private:
    void pump_in() {
        peer_.async_read_some(asio::buffer(in_), [self = shared_from_this()](auto err, auto n) {
            if (err)
                return self->close();
            if (!self->check_.feed(self->in_.data(), n)) {
                spdlog::warn("cluster: closed the connection from {}: {}", self->from_,
                             self->check_.why());
                if (self->on_refused_)
                    self->on_refused_();
                return self->close();
            }
            asio::async_write(self->upstream_, asio::buffer(self->in_.data(), n),
                              [self](auto werr, auto) {
                                  if (werr)
                                      return self->close();
                                  self->pump_in();
                              });
        });
    }

    void pump_out() {
        upstream_.async_read_some(
            asio::buffer(out_), [self = shared_from_this()](auto err, auto n) {
                if (err)
                    return self->close();
                asio::async_write(self->peer_, asio::buffer(self->out_.data(), n),
                                  [self](auto werr, auto) {
                                      if (werr)
                                          return self->close();
                                      self->pump_out();
                                  });
            });
    }

    void close() {
        boost::system::error_code ignored;
        peer_.close(ignored);
        upstream_.close(ignored);
    }

    tcp::socket peer_;
    tcp::socket upstream_;
    basp_header_check check_;
    std::function<void()> on_refused_;
    std::string from_;
    std::array<unsigned char, 16384> in_{};
    std::array<unsigned char, 16384> out_{};
};

} // namespace

struct basp_guard::impl {
    asio::io_context io{1};
    tcp::acceptor acceptor{io};
    tcp::endpoint upstream;
    basp_guard_limits limits;
    std::function<void()> on_refused;
    std::thread thread;

    void accept() {
        acceptor.async_accept([this](auto err, tcp::socket s) {
            if (err == asio::error::operation_aborted)
                return;
            if (!err)
                std::make_shared<relay>(std::move(s), io, limits, on_refused)->start(upstream);
            accept();
        });
    }
};

basp_guard::basp_guard(std::unique_ptr<impl> p)
    : impl_(std::move(p)) {}

basp_guard::~basp_guard() {
    impl_->io.stop();
    if (impl_->thread.joinable())
        impl_->thread.join();
}

std::uint16_t basp_guard::port() const noexcept {
    boost::system::error_code ec;
    const auto ep = impl_->acceptor.local_endpoint(ec);
    return ec ? 0 : ep.port();
}

result<std::unique_ptr<basp_guard>> basp_guard::start(const std::string& host, std::uint16_t port,
                                                      std::uint16_t upstream_port,
                                                      basp_guard_limits limits,
                                                      std::function<void()> on_refused) {
    auto p = std::make_unique<impl>();
    p->limits = limits;
    p->on_refused = std::move(on_refused);
    p->upstream = tcp::endpoint(asio::ip::make_address("127.0.0.1"), upstream_port);
    boost::system::error_code ec;
    tcp::resolver resolver(p->io);
    const auto found = resolver.resolve(host.empty() ? "127.0.0.1" : host, std::to_string(port),
                                        tcp::resolver::numeric_service, ec);
    if (ec || found.empty())
        return error{errc::io_error,
                     "cannot resolve the cluster address '" + host + "': " + ec.message()};
    const auto at = found.begin()->endpoint();
    p->acceptor.open(at.protocol(), ec);
    if (!ec)
        p->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec)
        p->acceptor.bind(at, ec);
    if (!ec)
        p->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
        return error{errc::io_error, "cannot listen for cluster peers on " + host + ":" +
                                         std::to_string(port) + ": " + ec.message()};
    p->accept();
    auto* raw = p.get();
    p->thread = std::thread([raw] { raw->io.run(); });
    return std::unique_ptr<basp_guard>(new basp_guard(std::move(p)));
}

} // namespace bitnet::server
