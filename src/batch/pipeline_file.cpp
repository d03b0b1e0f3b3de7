// Pipeline files: JSON -> the OP strings the command line takes. Objects are turned into OP strings (rather
// than into a second parameter path) so that a file and a command line give the very same validation and
// messages; each op is parsed here once, so a bad file fails before a batch starts.
#include "batch/pipeline_file.hpp"

#include <charconv>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "apron/errors.hpp"
#include "apron/ops.hpp"
#include "batch/text.hpp"
#include "io/file_io.hpp"

namespace apron::batch {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;  // keeps the file's member order in the OP strings it makes

constexpr std::size_t max_pipeline_file_bytes = std::size_t(4) << 20;
// A pipeline file nests 3 deep and its objects have a few members; far larger input is not a pipeline, and
// the limits bound the work of hostile input (ordered_json finds a member by a linear search).
constexpr std::size_t max_depth = 32;
constexpr std::size_t max_members = 1024;

// Where the parser is, for messages: "ops[1].sigma".
struct Level {
    bool array = false;
    std::size_t index = 0;      // array: the element being read
    std::string key;            // object: the member being read
    std::set<std::string> keys; // object: the members seen
};

// "NAME: WHERE: PROBLEM", or "NAME: PROBLEM" at the top level.
[[noreturn]] void error(const std::string& name, const std::string& where, const std::string& problem) {
    throw Error(name + ": " + (where.empty() ? "" : where + ": ") + problem);
}

std::string path_of(const std::vector<Level>& levels) {
    std::string path;
    for (const auto& l : levels) {
        if (l.array) {
            path += '[';
            path += std::to_string(l.index);  // appended piecewise: GCC 12 warns (-Wrestrict) on "[" + string
            path += ']';
        } else if (!l.key.empty()) {
            if (!path.empty()) path += '.';
            path += l.key;
        }
    }
    return path;
}

// Parses the JSON, refusing what nlohmann-json accepts silently: a member given twice (the last would win),
// and sizes no pipeline file needs.
Json parse_json(std::string_view content, const std::string& name) {
    std::vector<Level> levels;
    auto element_done = [&] {
        if (!levels.empty() && levels.back().array) ++levels.back().index;
    };
    Json::parser_callback_t watch = [&](int, Json::parse_event_t event, Json& parsed) {
        switch (event) {
        case Json::parse_event_t::object_start:
        case Json::parse_event_t::array_start:
            if (levels.size() >= max_depth) error(name, path_of(levels), "nested too deeply");
            levels.push_back({event == Json::parse_event_t::array_start});
            break;
        case Json::parse_event_t::key: {
            Level& object = levels.back();
            object.key.clear();
            const std::string key = parsed.get<std::string>();
            if (!object.keys.insert(key).second)
                error(name, path_of(levels), "member " + text::quoted(key) + " given twice");
            if (object.keys.size() > max_members)
                error(name, path_of(levels), "more than " + std::to_string(max_members) + " members in one object");
            object.key = key;
            break;
        }
        case Json::parse_event_t::object_end:
        case Json::parse_event_t::array_end:
            levels.pop_back();
            element_done();
            break;
        case Json::parse_event_t::value: element_done(); break;
        }
        return true;
    };
    try {
        return Json::parse(content.begin(), content.end(), watch);
    } catch (const Json::parse_error& e) {
        // "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ..." -> from "line".
        std::string what = e.what();
        const std::size_t at = what.find("at line ");
        what = at != std::string::npos ? what.substr(at + 3) : "byte " + std::to_string(e.byte) + ": " + what;
        throw Error(name + ": " + what);
    } catch (const Json::exception& e) {
        throw Error(name + ": " + e.what());
    }
}

std::string kind_of(const Json& j) { return j.type_name(); }

// Relative file names (names_file: a mistyped se shape, which has a ':', is reported as an unknown shape, not
// as a missing file under base_dir) are relative to the pipeline file's directory (kept as written when that
// is ".").
std::string resolved(const std::string& key, const std::string& value, const std::string& base_dir) {
    if (value.empty() || base_dir.empty() || base_dir == "." || !names_file(key, value)) return value;
    if (fs::path(value).is_absolute()) return value;
    return (fs::path(base_dir) / value).string();
}

// An OP string with its file parameters resolved; an item parse_operation would refuse is kept, for it to name.
std::string resolve_op_string(const std::string& op, const std::string& base_dir) {
    OperationText parts = split_operation(op);
    for (auto& [key, value] : parts.items)
        if (!key.empty()) value = resolved(key, value, base_dir);
    return join_operation(parts);
}

std::string number_text(const Json& v) {
    if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
    if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    // The shortest text that reads back as the same double (2.5 -> "2.5", 2.0 -> "2", 1e-7 -> "1e-07").
    char buffer[64];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v.get<double>());
    return ec == std::errc() ? std::string(buffer, end) : std::string("nan");
}

bool known_parameter(const OpInfo& info, const std::string& key) {
    for (const auto& p : info.params)
        if (p.name == key) return true;
    return false;
}

std::string known_parameters(const OpInfo& info) {
    std::string known;
    for (const auto& p : info.params) known += (known.empty() ? "" : ", ") + p.name;
    return known.empty() ? "it takes none" : "known: " + known;
}

// {"op": NAME, KEY: VALUE, ...} -> "NAME:KEY=VALUE,..."
std::string op_from_object(const Json& object, const std::string& name, const std::string& where,
                           const std::string& base_dir) {
    const auto op = object.find("op");
    if (op == object.end()) error(name, where, "missing \"op\" (the operation's name)");
    if (!op->is_string()) error(name, where + ".op", "must be a string, found " + kind_of(*op));
    const std::string& op_name = op->get_ref<const std::string&>();
    if (op_name.empty() || op_name.find_first_of(":,=") != std::string::npos)
        error(name, where + ".op", text::quoted(op_name) + " is not an operation name (see `apron ops`)");
    const OpInfo* info = find_operation(op_name);
    if (!info) error(name, where + ".op", "unknown operation " + text::quoted(op_name) + " (see `apron ops`)");
    std::string spec = op_name;
    char separator = ':';
    for (const auto& [key, value] : object.items()) {
        if (key == "op") continue;
        const std::string at = where + "." + key;
        // The OP string syntax cannot carry these; refusing beats a silently different parameter.
        if (key.empty() || key.find_first_of(",=") != std::string::npos)
            error(name, at, "a parameter name must not be empty or hold ',' or '='");
        if (!known_parameter(*info, key))
            error(name, at, "unknown parameter of " + op_name + " (" + known_parameters(*info) + ")");
        std::string text_value;
        if (value.is_string()) text_value = resolved(key, value.get<std::string>(), base_dir);
        else if (value.is_number()) text_value = number_text(value);
        else if (value.is_boolean()) text_value = value.get<bool>() ? "true" : "false";
        else error(name, at, "must be a string, number or boolean, found " + kind_of(value) +
                                 (value.is_array() ? " (write weight vectors as a string, e.g. \"1:2:1\")" : ""));
        if (text_value.find(',') != std::string::npos)
            error(name, at, text::quoted(text_value) + " holds ',', which an op parameter cannot");
        spec += separator + key + "=" + text_value;
        separator = ',';
    }
    return spec;
}

// Parses `spec` as the command line would; messages name the file and where in it, and for an object op the
// member at fault ("ops[1].sigma") when the message names one of its parameters.
void validate_op(const std::string& spec, const Json& source, const std::string& name, const std::string& where) {
    try {
        (void)parse_operation(spec);
    } catch (const Error& e) {
        std::string what = e.what();
        const std::string prefix = "--op " + spec + ": ";
        if (what.rfind(prefix, 0) == 0) {
            what.erase(0, prefix.size());
            // "sigma: problem" of an object op is about its member "sigma", given or missing.
            if (const OpInfo* info = source.is_object() ? find_operation(spec.substr(0, spec.find(':'))) : nullptr)
                for (const auto& param : info->params)
                    if (what.rfind(param.name + ": ", 0) == 0)
                        error(name, where + "." + param.name, what.substr(param.name.size() + 2));
            error(name, where, source.is_object() ? what : spec + ": " + what);
        }
        error(name, where, what);
    } catch (const std::exception& e) {  // e.g. out of memory for an absurd mask: still an error, not a crash
        error(name, where, spec + ": " + e.what());
    }
}

std::vector<std::string> read_ops(const Json& ops, const std::string& name, const std::string& base_dir) {
    if (!ops.is_array()) error(name, "ops", "must be an array of operations, found " + kind_of(ops));
    if (ops.empty()) error(name, "ops", "empty (give at least one operation)");
    std::vector<std::string> specs;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const Json& op = ops[i];
        const std::string where = "ops[" + std::to_string(i) + "]";
        std::string spec;
        if (op.is_string()) {
            const std::string& written = op.get_ref<const std::string&>();
            if (text::trim(written).empty()) error(name, where, "empty operation");
            spec = resolve_op_string(written, base_dir);
        } else if (op.is_object()) {
            spec = op_from_object(op, name, where, base_dir);
        } else {
            error(name, where, "must be an OP string or an object {\"op\": NAME, ...}, found " + kind_of(op));
        }
        validate_op(spec, op, name, where);
        specs.push_back(std::move(spec));
    }
    return specs;
}

std::string algorithm_names() {
    std::string names;
    for (Algorithm a : {Algorithm::automatic, Algorithm::direct, Algorithm::separable, Algorithm::low_rank,
                        Algorithm::fft, Algorithm::tensor})
        names += (names.empty() ? "" : ", ") + std::string(to_string(a));
    return names;
}

const std::string& string_member(const Json& v, const std::string& name, const std::string& key) {
    if (!v.is_string()) error(name, key, "must be a string, found " + kind_of(v));
    return v.get_ref<const std::string&>();
}

} // namespace

PipelineFile parse_pipeline_file(std::string_view content, const std::string& name, const std::string& base_dir) {
    const Json root = parse_json(content, name);
    if (!root.is_object())
        error(name, "", "the top level must be an object {\"ops\": [...]}, found " + kind_of(root));
    PipelineFile file;
    for (const auto& [key, value] : root.items()) {
        if (key == "ops") {
            file.ops = read_ops(value, name, base_dir);
        } else if (key == "out_type") {
            const std::string& s = string_member(value, name, key);
            file.out_type = parse_pixel_type(s);
            if (!file.out_type) error(name, key, "unknown pixel type " + text::quoted(s) + " (use u8, u16 or f32)");
        } else if (key == "algo") {
            const std::string& s = string_member(value, name, key);
            file.algo = parse_algorithm(s);
            if (!file.algo)
                error(name, key, "unknown algorithm " + text::quoted(s) + " (use " + algorithm_names() + ")");
        } else {
            error(name, "", "unknown member " + text::quoted(key) + " (known: ops, out_type, algo)");
        }
    }
    if (file.ops.empty()) error(name, "ops", "missing (the list of operations)");
    return file;
}

PipelineFile read_pipeline_file(const std::string& path) {
    const std::string content = io::read_file(path, "pipeline file", max_pipeline_file_bytes);
    std::string base = fs::path(path).parent_path().string();
    return parse_pipeline_file(content, path, base.empty() ? "." : base);
}

} // namespace apron::batch
