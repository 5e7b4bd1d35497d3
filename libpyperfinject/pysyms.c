#include "pysyms.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* One row per field: the names to try in order (CPython renamed several
 * between versions) and the minor versions that must have it. */
struct symbol {
    size_t field;
    const char *names[3];
    unsigned from_minor; /* required from this minor on */
    unsigned until_minor; /* ... up to and including this one */
};

#define F(x) offsetof(struct pi_py, x)
static const struct symbol symbols[] = {
    {F(GetVersion), {"Py_GetVersion"}, 6, 99},
    {F(IsInitialized), {"Py_IsInitialized"}, 6, 99},
    {F(EvalFrameDefault), {"_PyEval_EvalFrameDefault"}, 6, 99},
    {F(CodeType), {"PyCode_Type"}, 6, 99},
    {F(ThreadStateGet), {"PyThreadState_GetUnchecked", "_PyThreadState_UncheckedGet"}, 6, 99},
    {F(InterpreterHead), {"PyInterpreterState_Head"}, 6, 99},
    {F(InterpreterGetID), {"PyInterpreterState_GetID"}, 7, 99},
    {F(GetEvalFrameFunc), {"_PyInterpreterState_GetEvalFrameFunc"}, 9, 99},
    {F(SetEvalFrameFunc), {"_PyInterpreterState_SetEvalFrameFunc"}, 9, 99},
    {F(RequestCodeExtraIndex),
     {"PyUnstable_Eval_RequestCodeExtraIndex", "_PyEval_RequestCodeExtraIndex"}, 8, 99},
    {F(CodeGetExtra), {"PyUnstable_Code_GetExtra", "_PyCode_GetExtra"}, 8, 99},
    {F(CodeSetExtra), {"PyUnstable_Code_SetExtra", "_PyCode_SetExtra"}, 8, 99},
    {F(AddAuditHook), {"PySys_AddAuditHook"}, 8, 99},
    {F(AtExit), {"Py_AtExit"}, 6, 99},
    {F(UnicodeAsUTF8AndSize), {"PyUnicode_AsUTF8AndSize"}, 6, 99},
    {F(UnicodeAsEncodedString), {"PyUnicode_AsEncodedString"}, 6, 99},
    {F(BytesAsString), {"PyBytes_AsString"}, 6, 99},
    {F(DecRef), {"Py_DecRef"}, 6, 99},
    {F(IncRef), {"Py_IncRef"}, 6, 99},
    {F(ErrOccurred), {"PyErr_Occurred"}, 6, 99},
    {F(ErrFetch), {"PyErr_Fetch"}, 6, 99},
    {F(ErrRestore), {"PyErr_Restore"}, 6, 99},
    {F(ErrClear), {"PyErr_Clear"}, 6, 99},
    {F(ErrSetString), {"PyErr_SetString"}, 6, 99},
    {F(ExcRecursionError), {"PyExc_RecursionError"}, 6, 99},
    {F(AddPendingCall), {"Py_AddPendingCall"}, 6, 99},
    {F(SaveThread), {"PyEval_SaveThread"}, 6, 99},
    {F(RestoreThread), {"PyEval_RestoreThread"}, 6, 99},
    {F(GILStateCheck), {"PyGILState_Check"}, 6, 99},
    {F(GILStateEnsure), {"PyGILState_Ensure"}, 6, 99},
    {F(GILStateRelease), {"PyGILState_Release"}, 6, 99},
    {F(SysGetObject), {"PySys_GetObject"}, 6, 99},
    {F(SysSetObject), {"PySys_SetObject"}, 6, 99},
    {F(CFunctionNewEx), {"PyCFunction_NewEx"}, 6, 99},
    {F(ObjectCall), {"PyObject_Call"}, 6, 99},
    {F(TupleGetItem), {"PyTuple_GetItem"}, 6, 99},
    {F(ObjectGetAttrString), {"PyObject_GetAttrString"}, 6, 99},
    {F(ObjectSetAttrString), {"PyObject_SetAttrString"}, 6, 99},
    {F(ModuleNew), {"PyModule_New"}, 6, 99},
};
#undef F

int pi_pysyms_resolve(struct pi_py *py, void *handle, unsigned minor, char *missing,
                      size_t missing_len)
{
    memset(py, 0, sizeof *py);
    for (size_t i = 0; i < sizeof symbols / sizeof *symbols; i++) {
        const struct symbol *s = &symbols[i];
        void *addr = NULL;
        for (size_t n = 0; n < 3 && s->names[n] && !addr; n++)
            addr = dlsym(handle, s->names[n]);
        if (addr == NULL && minor >= s->from_minor && minor <= s->until_minor) {
            snprintf(missing, missing_len, "%s", s->names[0]);
            return -1;
        }
        memcpy((char *)py + s->field, &addr, sizeof addr);
    }
    /* Present only in free-threaded builds (Include/object.h, 3.13+). */
    py->free_threaded = dlsym(handle, "_Py_MergeZeroLocalRefcount") != NULL;
    return 0;
}

int pi_pysyms_is_cpython(void *handle)
{
    /* PyPy's cpyext exports PyPy-prefixed names and no CPython evaluator. */
    return dlsym(handle, "Py_GetVersion") != NULL &&
           dlsym(handle, "_PyEval_EvalFrameDefault") != NULL &&
           dlsym(handle, "PyCode_Type") != NULL;
}
