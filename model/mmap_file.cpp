// Read-only mmap of a whole file (POSIX).
#include "model/mmap_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bitnet::model {

result<std::shared_ptr<const mmap_file>> mmap_file::open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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
        return error(errc::io_error, "'" + path + "' is not a regular file");
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    const std::uint8_t* data = nullptr;
    if (size > 0) {
        void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            const int e = errno;
            ::close(fd);
            return error(errc::io_error, "cannot mmap '" + path + "': " + std::strerror(e));
        }
        data = static_cast<const std::uint8_t*>(p);
    }
    ::close(fd); // the mapping keeps the file referenced
    return std::shared_ptr<const mmap_file>(new mmap_file(data, size));
}

mmap_file::~mmap_file() {
    if (data_ != nullptr)
        ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

void mmap_file::release_pages(std::span<const std::uint8_t> range) const noexcept {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(range.data());
    const auto end = begin + range.size();
    const auto map_begin = reinterpret_cast<std::uintptr_t>(data_);
    if (begin < map_begin || end > map_begin + size_)
        return;
    // Only pages entirely inside the range: a neighbouring tensor may share the edge pages.
    const std::uintptr_t first = (begin + page - 1) / page * page;
    const std::uintptr_t last = end / page * page;
    if (first < last)
        ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

} // namespace bitnet::model
