// apron reports every failure as one apron::Error line (include/apron/errors.hpp) whose kind shows only in
// its words; Python users catch by class, so the line is mapped here:
//   MemoryError  the memory budget (apron/memory.hpp: "... over the memory budget of ...") or host memory
//   OSError      files that cannot be opened, read, created or written, or are not regular files
//   ValueError   everything else: parameters, masks, shapes, backends (the registry's one-line errors)
// TypeError is raised in Python, where the arrays' types are checked.
#include <new>
#include <string>

#include "apron/errors.hpp"
#include "bindings.hpp"

namespace apron::python {

namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

PyObject* exception_type(const std::string& message) {
    if (has(message, "over the memory budget") || has(message, "out of host memory")) return PyExc_MemoryError;
    if (has(message, ": cannot open") || has(message, ": cannot read") || has(message, ": cannot write") ||
        has(message, ": cannot create") || has(message, "not a regular file") || has(message, ": is a directory"))
        return PyExc_OSError;
    return PyExc_ValueError;
}

} // namespace

void bind_errors(nb::module_&) {
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const apron::Error& e) {
            PyErr_SetString(exception_type(e.what()), e.what());
        } catch (const std::bad_alloc&) {
            PyErr_SetString(PyExc_MemoryError, "out of host memory");
        }
    });
}

} // namespace apron::python
