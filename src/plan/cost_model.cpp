// Calibration tables: parsing, lookup and interpolation (see cost_model.hpp).
#include "core/overrides.hpp"
#include "plan/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "apron/errors.hpp"
#include "plan/plan.hpp"

namespace apron {
namespace {

// How a path's time per output grows with the mask side beyond the measured range.
double growth_exponent(std::string_view path) {
    if (path == "direct" || path == "tensor") return 2;
    if (path == "separable") return 1;
    if (path == "fft") return 0.3;
    return 0;
}

// Classes a class borrows from when the table has no point for it (u16 moves twice the bytes of u8 and
// half those of f32: closest to f32 for these memory-light paths).
// A colour class ("u8-c3") borrows along the same chain on its channel count first, then on gray.
std::vector<std::string> class_chain(std::string_view cls) {
    std::string base(cls), colour;
    if (const auto at = base.rfind("-c"); at != std::string::npos && at + 2 < base.size()) {
        colour = base.substr(at);
        base.resize(at);
    }
    std::vector<std::string> gray;
    if (base == "u8-int") gray = {"u8-int", "u8", "f32"};
    else if (base == "u16") gray = {"u16", "f32"};
    else if (base == "u8") gray = {"u8", "f32"};
    else gray = {base};
    std::vector<std::string> chain;
    if (!colour.empty())
        for (const std::string& c : gray) chain.push_back(c + colour);
    chain.insert(chain.end(), gray.begin(), gray.end());
    return chain;
}

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> f;
    std::istringstream in(line);
    std::string field;
    while (in >> field) f.push_back(field);
    return f;
}

} // namespace

std::optional<double> CostTable::seconds(std::string_view path, std::string_view cls, double k, double samples) const {
    for (const std::string& c : class_chain(cls)) {
        std::vector<const CostPoint*> pts;
        for (const auto& p : points)
            if (p.path == path && p.cls == c && p.gpix > 0) pts.push_back(&p);
        if (pts.empty()) continue;
        std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->k < b->k; });
        // seconds per sample at the measured sides, interpolated in log-log
        auto per = [](const CostPoint* p) { return 1e-9 / p->gpix; };
        double s;
        if (k <= pts.front()->k) {
            s = per(pts.front()) * (path == "combine" ? 1 : std::pow(k / pts.front()->k, growth_exponent(path)));
            s = std::max(s, per(pts.front()) * 0.5);  // small masks are bound by memory, not taps
        } else if (k >= pts.back()->k) {
            s = per(pts.back()) * std::pow(k / pts.back()->k, growth_exponent(path));
        } else {
            std::size_t i = 1;
            while (pts[i]->k < k) ++i;
            const double k0 = pts[i - 1]->k, k1 = pts[i]->k;
            const double t = (std::log(k) - std::log(k0)) / (std::log(k1) - std::log(k0));
            s = std::exp(std::log(per(pts[i - 1])) * (1 - t) + std::log(per(pts[i])) * t);
        }
        return s * samples;
    }
    return std::nullopt;
}

CostTable parse_cost_table(std::string_view text, const std::string& source) {
    CostTable t;
    t.source = source;
    std::istringstream in{std::string(text)};
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (line.empty() || line[0] == '#') continue;
        const auto f = split_tabs(line);
        if (f.empty()) continue;
        auto bad = [&](const std::string& why) {
            fail(source, "line " + std::to_string(number) + ": " + why);
        };
        if (f[0] == "backend" && f.size() == 2) {
            t.backend = f[1];
        } else if (f[0] == "arch" && f.size() == 2) {
            t.arch = std::atoi(f[1].c_str());
        } else if (f[0] == "device") {
            t.device = line.substr(line.find_first_not_of(" \t", 6));
        } else if (f.size() == 4) {
            CostPoint p{f[0], f[1], std::strtod(f[2].c_str(), nullptr), std::strtod(f[3].c_str(), nullptr)};
            if (!(p.k >= 1) || !(p.gpix > 0) || !std::isfinite(p.gpix)) bad("expected PATH CLASS K GPIX_PER_S with K >= 1 and a positive rate");
            t.points.push_back(std::move(p));
        } else {
            bad("expected 'backend NAME', 'arch N', 'device TEXT' or PATH CLASS K GPIX_PER_S");
        }
    }
    if (t.backend != "cuda" && t.backend != "cpu") fail(source, "no 'backend cuda' or 'backend cpu' line");
    if (t.points.empty()) fail(source, "no measurements");
    return t;
}

std::string format_cost_table(const CostTable& t) {
    std::ostringstream o;
    o << "backend\t" << t.backend << "\narch\t" << t.arch << "\ndevice\t" << t.device << "\n# path\tclass\tk\tgpix_per_s\n";
    for (const auto& p : t.points) {
        char rate[32];
        std::snprintf(rate, sizeof rate, "%.4g", p.gpix);
        o << p.path << '\t' << p.cls << '\t' << p.k << '\t' << rate << '\n';
    }
    return o.str();
}

const CostTable* cost_table_for(Backend backend, int cuda_arch, const std::string& device) {
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<CostTable>> cache;
    std::lock_guard lock(mutex);
    const std::string want = backend == Backend::cuda ? "cuda" : "cpu";
    if (const char* file = overrides().calibration.c_str(); *file) {
        auto& slot = cache[std::string("file:") + file];
        if (!slot) {
            std::ifstream in(file);
            if (!in) fail(std::string("APRON_CALIBRATION=") + file, "cannot be read");
            std::stringstream text;
            text << in.rdbuf();
            slot = std::make_unique<CostTable>(parse_cost_table(text.str(), file));
        }
        if (slot->backend == want) return slot.get();
    }
    const CostTable* best = nullptr;
    for (const auto& [name, text] : builtin_cost_tables()) {
        auto& slot = cache[name];
        if (!slot) slot = std::make_unique<CostTable>(parse_cost_table(text, "built in: calibration/" + name));
        if (slot->backend != want) continue;
        // The same model (the table's device line starts with its name and a comma), else the same
        // architecture, else the nearest one.
        auto model_of = [&](const CostTable& t) { return !device.empty() && t.device.rfind(device + ",", 0) == 0; };
        auto rank = [&](const CostTable& t) { return std::pair{!model_of(t), std::abs(t.arch - cuda_arch)}; };
        if (!best || rank(*slot) < rank(*best)) best = slot.get();
    }
    return best;
}

std::string cost_class(const LinearPlan& p, int channels) {
    const std::string colour = channels > 1 ? "-c" + std::to_string(channels) : "";
    if (p.in == PixelType::f32) return "f32" + colour;
    if (p.in == PixelType::u16) return "u16" + colour;
    if (p.exact) {
        bool bytes = true;
        for (auto w : p.integer_mask.weights) bytes = bytes && w >= -128 && w <= 127;
        if (bytes) return "u8-int" + colour;
    }
    return "u8" + colour;
}

} // namespace apron
