// read_mask_file (apron/mask.hpp): the file is read here, in the I/O layer, and parsed by the core's
// parse_mask_text, so the core reads no files.
#include <filesystem>

#include "apron/errors.hpp"
#include "apron/mask.hpp"
#include "io/file_io.hpp"

namespace apron {

Mask read_mask_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, not a mask file");
    return parse_mask_text(io::read_file(path, "mask file", std::size_t(64) << 20), path);
}

std::vector<Mask> read_mask_planes_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, not a mask file");
    return parse_mask_planes_text(io::read_file(path, "mask file", std::size_t(64) << 20), path);
}

} // namespace apron
