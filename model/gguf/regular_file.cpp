#include "model/gguf/regular_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bitnet::model {
namespace {

file_identity identity_of(const struct stat& st) {
    return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
            static_cast<std::uint64_t>(st.st_size),
            std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
            std::int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec};
}

const char* kind_of(mode_t mode) {
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a plain file";
}

error changed(const std::string& path, const std::string& how) {
    return error(errc::io_error, "'" + path + "' changed while it was being loaded (" + how +
                                     "); load it again once it is complete");
}

} // namespace

result<regular_file> regular_file::open(const std::string& path) {
    if (path.find('\0') != std::string::npos)
        return error(errc::invalid_argument, "a model path must not contain a NUL byte");
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return error(errc::io_error, "cannot open '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        return error(errc::io_error, "cannot stat '" + path + "': " + std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return error(errc::io_error,
                     "'" + path + "' is not a regular file (it is " + kind_of(st.st_mode) + ")");
    }
    return regular_file(fd, path, identity_of(st));
}

regular_file::regular_file(regular_file&& o) noexcept
    : fd_(o.fd_)
    , path_(std::move(o.path_))
    , id_(o.id_) {
    o.fd_ = -1;
}

regular_file& regular_file::operator=(regular_file&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = o.fd_;
        path_ = std::move(o.path_);
        id_ = o.id_;
        o.fd_ = -1;
    }
    return *this;
}

regular_file::~regular_file() {
    if (fd_ >= 0)
        ::close(fd_);
}

result<void> regular_file::read_at(std::uint64_t offset, std::span<std::uint8_t> dst) const {
    std::size_t done = 0;
    while (done < dst.size()) {
        const auto n =
            ::pread(fd_, dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return error(errc::io_error, "cannot read '" + path_ + "': " + std::strerror(errno));
        if (n == 0)
            return changed(path_, "it ended at " + std::to_string(offset + done) + " of " +
                                      std::to_string(id_.size) + " bytes");
        done += static_cast<std::size_t>(n);
    }
    return {};
}

result<void> regular_file::check_unchanged() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0)
        return error(errc::io_error, "cannot stat '" + path_ + "': " + std::strerror(errno));
    const auto open_now = identity_of(st);
    if (open_now.size != id_.size)
        return changed(path_, "its size went from " + std::to_string(id_.size) + " to " +
                                  std::to_string(open_now.size) + " bytes");
    if (::stat(path_.c_str(), &st) != 0)
        return changed(path_, std::string("it is gone: ") + std::strerror(errno));
    const auto named_now = identity_of(st);
    if (named_now.device != id_.device || named_now.inode != id_.inode)
        return changed(path_, "the path now names another file");
    if (open_now != id_ || named_now != id_)
        return changed(path_, "it was written to");
    return {};
}

result<void> check_cancel(const cancel_flag* cancel, const std::string& what) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed))
        return error(errc::cancelled, what + " was cancelled");
    return {};
}

} // namespace bitnet::model
