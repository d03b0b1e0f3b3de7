// Output paths of a batch. All of them are made before any work starts, so that a pattern that maps two
// inputs to one file, or an output that would overwrite an input, is refused up front.
#include "batch/naming.hpp"

#include <sys/stat.h>

#include <cctype>
#include <charconv>
#include <filesystem>
#include <map>
#include <unordered_map>
#include <utility>

#include "apron/errors.hpp"
#include "batch/text.hpp"

namespace apron::batch {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t shown_path = 4096;  // quote whole paths in messages, cut only absurd ones

struct Segment {
    enum Kind { literal, name, stem, ext, index } kind = literal;
    std::string text;  // literal
    int width = 0;     // {index:N}
};

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

[[noreturn]] void pattern_error(const std::string& pattern, const std::string& problem) {
    throw Error("output pattern " + text::quoted(pattern, 200) + ": " + problem);
}

Segment parse_field(const std::string& pattern, const std::string& field) {
    if (field == "name") return {Segment::name};
    if (field == "stem") return {Segment::stem};
    if (field == "ext") return {Segment::ext};
    if (field == "index") return {Segment::index};
    if (field.rfind("index:", 0) == 0) {
        const std::string digits = field.substr(6);
        int width = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), width);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || width < 1 || width > 18)
            pattern_error(pattern, "{" + field + "}: the width must be 1 to 18 digits, e.g. {index:5}");
        return {Segment::index, {}, width};
    }
    pattern_error(pattern, "unknown field {" + field + "} (use {name}, {stem}, {ext}, {index} or {index:N})");
}

std::vector<Segment> parse_pattern(const std::string& pattern) {
    if (pattern.empty()) pattern_error(pattern, "empty");
    if (pattern.find('/') != std::string::npos)
        pattern_error(pattern, "contains '/' (the pattern names a file inside the output directory)");
    if (pattern.find('\0') != std::string::npos) pattern_error(pattern, "contains a NUL byte");
    std::vector<Segment> segments;
    std::string literal;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '}') pattern_error(pattern, "'}' at column " + std::to_string(i + 1) + " closes no field");
        if (c != '{') {
            literal += c;
            continue;
        }
        const std::size_t close = pattern.find_first_of("{}", i + 1);
        if (close == std::string::npos || pattern[close] == '{')
            pattern_error(pattern, "'{' at column " + std::to_string(i + 1) + " is not closed by '}'");
        if (!literal.empty()) segments.push_back({Segment::literal, std::move(literal)});
        literal.clear();
        segments.push_back(parse_field(pattern, pattern.substr(i + 1, close - i - 1)));
        i = close;
    }
    if (!literal.empty()) segments.push_back({Segment::literal, std::move(literal)});
    return segments;
}

// The format of a pattern that ends in a literal extension ("{stem}_blur.png"), else nullopt.
std::optional<ImageFormat> literal_format(const std::string& pattern, const std::vector<Segment>& segments) {
    if (segments.back().kind != Segment::literal || segments.back().text.find('.') == std::string::npos)
        return std::nullopt;
    try {
        return format_for_path(pattern);  // only the text after the last '.' counts, and it is literal
    } catch (const Error& e) {
        std::string why = e.what();
        if (why.rfind(pattern + ": ", 0) == 0) why.erase(0, pattern.size() + 2);
        pattern_error(pattern, why);
    }
}

// The extension apron writes for an input's own extension (lower case, no dot), nullopt when apron cannot
// write that format: .pbm bitmaps are read as 8-bit gray, so they become .pgm; .pam (2 or 4 channels
// possible) has no PNM writer and goes to the PNG fallback.
std::optional<std::string> writable_extension(const std::string& ext) {
    if (ext == "pgm" || ext == "ppm" || ext == "pnm" || ext == "pfm" || ext == "png") return ext;
    if (ext == "jpg" || ext == "jpeg" || ext == "jpe") return "jpg";
#if APRON_HAVE_TIFF
    if (ext == "tif" || ext == "tiff") return "tif";
#endif
#if APRON_HAVE_FITS
    if (ext == "fits" || ext == "fit" || ext == "fts") return ext;
#endif
    if (ext == "pbm") return "pgm";
    return std::nullopt;
}

struct InputNames {
    std::string name, stem, ext;  // ext: lower case, without the dot
};

InputNames names_of(const std::string& path) {
    const fs::path name = fs::path(path).filename();
    std::string ext = name.extension().string();
    if (!ext.empty()) ext.erase(0, 1);
    return {name.string(), name.stem().string(), lower(ext)};
}

std::string expand(const std::vector<Segment>& segments, const InputNames& in, const std::string& ext,
                   std::size_t index) {
    std::string out;
    for (const auto& s : segments) {
        switch (s.kind) {
        case Segment::literal: out += s.text; break;
        case Segment::name: out += in.name; break;
        case Segment::stem: out += in.stem; break;
        case Segment::ext: out += ext; break;
        case Segment::index: {
            const std::string digits = std::to_string(index);
            if (digits.size() < std::size_t(s.width)) out.append(std::size_t(s.width) - digits.size(), '0');
            out += digits;
            break;
        }
        }
    }
    return out;
}

// Refuses a name the writer would not write as `format` (no or unknown extension, or another format's).
void check_output_name(const std::string& pattern, const std::string& name, const std::string& input,
                       ImageFormat wanted) {
    const std::string gives = "gives " + text::quoted(name, shown_path) + " for " + text::quoted(input, shown_path);
    if (name == "." || name == "..") pattern_error(pattern, gives + ", which is not a file name");
    ImageFormat actual{};
    try {
        actual = format_for_path(name);
    } catch (const Error& e) {
        std::string why = e.what();
        if (why.rfind(name + ": ", 0) == 0) why.erase(0, name.size() + 2);
        pattern_error(pattern, gives + ": " + why + "; end the pattern with .{ext} or an image extension");
    }
    if (actual != wanted)
        pattern_error(pattern, gives + ", a " + std::string(to_string(actual)) + " file, but the output format is " +
                                   to_string(wanted));
}

[[noreturn]] void collision(const std::vector<InputItem>& inputs, std::size_t first, std::size_t second,
                            const std::string& output, const std::string& pattern) {
    const std::string& a = inputs[first].path;
    const std::string& b = inputs[second].path;
    if (a == b)
        throw Error("input " + text::quoted(a, shown_path) + " is listed twice (#" + std::to_string(first) + " and #" +
                    std::to_string(second) + ")");
    throw Error("inputs " + text::quoted(a, shown_path) + " and " + text::quoted(b, shown_path) +
                " would both be written to " + text::quoted(output, shown_path) + " (output pattern " +
                text::quoted(pattern, 200) + "; put {index} in it to tell them apart)");
}

// Refuses outputs that are one of the inputs (the same file, however it is spelled): writing would destroy
// an input, maybe before it is read.
void check_no_input_overwritten(const std::vector<InputItem>& inputs, const std::vector<std::string>& outputs) {
    std::map<std::pair<dev_t, ino_t>, std::size_t> files;
    struct stat st {};
    for (std::size_t i = 0; i < inputs.size(); ++i)
        if (::stat(inputs[i].path.c_str(), &st) == 0) files.emplace(std::pair(st.st_dev, st.st_ino), i);
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        if (::stat(outputs[i].c_str(), &st) != 0) continue;
        const auto it = files.find({st.st_dev, st.st_ino});
        if (it != files.end())
            throw Error("output " + text::quoted(outputs[i], shown_path) + " of input " +
                        text::quoted(inputs[i].path, shown_path) + " would overwrite the input " +
                        text::quoted(inputs[it->second].path, shown_path) +
                        "; choose another output directory or pattern");
    }
}

} // namespace

const char* extension_of(ImageFormat format) {
    switch (format) {
    case ImageFormat::pnm: return "pgm";  // the writer picks P5 or P6 from the channels, not the extension
    case ImageFormat::pfm: return "pfm";
    case ImageFormat::png: return "png";
    case ImageFormat::jpeg: return "jpg";
    case ImageFormat::tiff: return "tif";
    case ImageFormat::fits: return "fits";
    }
    return "png";
}

std::optional<ImageFormat> parse_format(const std::string& name) {
    const std::string n = lower(name);
    if (n == "png") return ImageFormat::png;
    if (n == "pgm" || n == "ppm" || n == "pnm") return ImageFormat::pnm;
    if (n == "pfm") return ImageFormat::pfm;
    if (n == "jpg" || n == "jpeg") return ImageFormat::jpeg;
    if (n == "tif" || n == "tiff") return ImageFormat::tiff;
    if (n == "fits" || n == "fit" || n == "fts") return ImageFormat::fits;
    return std::nullopt;
}

std::vector<std::string> output_paths(const std::vector<InputItem>& inputs, const OutputNaming& naming) {
    const std::vector<Segment> segments = parse_pattern(naming.pattern);
    const std::optional<ImageFormat> literal = literal_format(naming.pattern, segments);
    std::vector<std::string> outputs;
    outputs.reserve(inputs.size());
    std::unordered_map<std::string, std::size_t> taken;  // output -> the input that gives it
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const InputNames in = names_of(inputs[i].path);
        const std::string own = writable_extension(in.ext).value_or("");  // "": apron does not write it
        const ImageFormat own_format = own.empty() ? ImageFormat::png : *parse_format(own);
        const ImageFormat format = naming.format ? *naming.format : literal ? *literal : own_format;
        // Keep the input's spelling within a format (.ppm stays .ppm), else the format's usual extension.
        const std::string ext = !own.empty() && own_format == format ? own : extension_of(format);
        const std::string name = expand(segments, in, ext, i);
        check_output_name(naming.pattern, name, inputs[i].path, format);

        std::string path = naming.directory.empty() ? name : (fs::path(naming.directory) / name).string();
        const auto [it, fresh] = taken.emplace(path, i);
        if (!fresh) collision(inputs, it->second, i, path, naming.pattern);
        outputs.push_back(std::move(path));
    }
    check_no_input_overwritten(inputs, outputs);
    return outputs;
}

std::vector<BatchItem> batch_items(const InputSet& inputs, const OutputNaming& naming, BatchOptions& options) {
    const std::vector<std::string> outputs = output_paths(inputs.items, naming);
    std::vector<BatchItem> items;
    items.reserve(inputs.items.size());
    for (std::size_t i = 0; i < inputs.items.size(); ++i)
        items.push_back({inputs.items[i].path, outputs[i], inputs.items[i].pad_x, inputs.items[i].pad_y});
    if (inputs.job) {
        options.bits = inputs.job->bits;
        options.max_width = inputs.job->max_width;
        options.max_height = inputs.job->max_height;
    }
    return items;
}

} // namespace apron::batch
