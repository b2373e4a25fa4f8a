// Raw TCP on loopback for the hostile-input tests: bytes exactly as written (no HTTP library
// fixes them up), reads bounded by a deadline, and the status line picked out of what came back.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace bitnet::test {

/// A connected socket, closed when it goes out of scope; -1 when the connect failed.
class raw_conn {
public:
    /// `from`: the loopback address it connects from (127.0.0.1 when 0; every 127.x.y.z is
    /// loopback on Linux), so one test can be several clients to the server's per-address caps.
    explicit raw_conn(std::uint16_t port, std::uint32_t from = 0) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd_ < 0)
            return;
        if (from != 0) {
            sockaddr_in local{};
            local.sin_family = AF_INET;
            local.sin_addr.s_addr = htonl(from);
            if (::bind(fd_, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
                close();
                return;
            }
        }
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
            close();
    }
    ~raw_conn() { close(); }
    raw_conn(raw_conn&& o) noexcept
        : fd_(o.fd_) {
        o.fd_ = -1;
    }
    raw_conn(const raw_conn&) = delete;
    raw_conn& operator=(const raw_conn&) = delete;
    raw_conn& operator=(raw_conn&&) = delete;

    [[nodiscard]] bool ok() const noexcept { return fd_ >= 0; }
    [[nodiscard]] int fd() const noexcept { return fd_; }

    /// Sends all of `bytes` unless the peer stops taking them; false when it did.
    bool send(std::string_view bytes) {
        while (!bytes.empty() && fd_ >= 0) {
            pollfd p{fd_, POLLOUT, 0};
            if (::poll(&p, 1, 5000) <= 0)
                return false;
            const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n <= 0)
                return false;
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
        return fd_ >= 0;
    }

    /// Reads until the peer closes, `stop_at` appears (when not empty), or `timeout` passes.
    /// `closed` tells whether the peer closed (EOF or reset).
    std::string read_until(std::chrono::milliseconds timeout, std::string_view stop_at = {},
                           bool* closed = nullptr) {
        std::string out;
        const auto until = std::chrono::steady_clock::now() + timeout;
        if (closed)
            *closed = false;
        while (fd_ >= 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                until - std::chrono::steady_clock::now());
            if (left.count() <= 0)
                break;
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
                break;
            char buf[16384];
            const auto n = ::recv(fd_, buf, sizeof buf, 0);
            if (n <= 0) {
                if (closed)
                    *closed = true;
                break;
            }
            out.append(buf, static_cast<std::size_t>(n));
            if (!stop_at.empty() && out.find(stop_at) != std::string::npos)
                break;
        }
        return out;
    }

    void close() {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

/// The status code of the first status line in `bytes`, 0 when there is none.
inline unsigned status_of(std::string_view bytes) {
    if (bytes.substr(0, 5) != "HTTP/" || bytes.size() < 12)
        return 0;
    const auto sp = bytes.find(' ');
    if (sp == std::string_view::npos || sp + 4 > bytes.size())
        return 0;
    unsigned v = 0;
    for (std::size_t i = sp + 1; i < sp + 4; ++i) {
        if (bytes[i] < '0' || bytes[i] > '9')
            return 0;
        v = v * 10 + static_cast<unsigned>(bytes[i] - '0');
    }
    return v;
}

/// One request on a fresh connection: its whole answer (until the server closes, the end of the
/// headers and body are not parsed here), bounded by `timeout`.
inline std::string raw_exchange(std::uint16_t port, std::string_view request,
                                std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    raw_conn c(port);
    if (!c.ok())
        return {};
    c.send(request);
    return c.read_until(timeout);
}

} // namespace bitnet::test
