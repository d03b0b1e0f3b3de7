#pragma once
// The file a write to a path replaces or creates, resolved once for every writer (write_file_atomically,
// the streamed row sinks): the path itself, or the end of its chain of symbolic links. Anything that is not
// a regular file there is refused by name ("PATH: is a FIFO, not a regular file; apron writes only regular
// files").
#include <sys/stat.h>

#include <string>

namespace apron::io {

struct OutputTarget {
    std::string path;
    bool exists = false;
    struct stat st {};
};

OutputTarget resolve_output(const std::string& path);
// Throws "PATH: is a directory; give a file name such as PATH/name.png" when `path` names an existing
// directory: what a writer says before it would complain of the path's extension.
void refuse_directory(const std::string& path);
// The directory part of a path ("." for a bare name).
std::string directory_of(const std::string& path);

}  // namespace apron::io
