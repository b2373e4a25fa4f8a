#include "model/gguf/file_image.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

namespace bitnet::model {

result<std::shared_ptr<const file_image>>
file_image::read(const regular_file& file, std::uint64_t n_bytes, const cancel_flag* cancel) {
    const auto size = static_cast<std::size_t>(std::min(n_bytes, file.size()));
    if (size == 0)
        return std::shared_ptr<const file_image>(new file_image(nullptr, 0));
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return error(errc::io_error, "cannot allocate " + std::to_string(size) + " bytes for '" +
                                         file.path() + "': " + std::strerror(errno));
    std::shared_ptr<const file_image> image(new file_image(static_cast<std::uint8_t*>(p), size));
    // Chunks bound how long a cancelled load keeps reading.
    constexpr std::size_t chunk = std::size_t{8} << 20;
    auto* dst = static_cast<std::uint8_t*>(p);
    for (std::size_t at = 0; at < size; at += chunk) {
        BITNET_TRY(check_cancel(cancel, "reading '" + file.path() + "'"));
        BITNET_TRY(file.read_at(at, {dst + at, std::min(chunk, size - at)}));
    }
    ::mprotect(p, size, PROT_READ); // read-only from here: a stray write faults at once
    return image;
}

file_image::~file_image() {
    if (data_ != nullptr)
        ::munmap(data_, size_);
}

void file_image::release_pages(std::span<const std::uint8_t> range) const noexcept {
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
