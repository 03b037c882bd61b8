/*
 * Fused pointwise work of the circle pseudo-spectral right-hand side (solvers/schemes/circle.py,
 * MATH.md §2.1).  Optional: solvers/schemes/circle_kernel.py falls back to numpy, with the same bits,
 * when this extension was not built.
 *
 * One call of CircleKernel.rhs(state, s[, source]) does what CircleSpectral.transport(state, source) does
 * with numpy (source: the state itself unless given; the causal kinetic PDE of MATH.md §8 gives the
 * positional average), for each row of state (one density, or the slices of the kinetic PDE; max |X| is
 * then the largest over the rows):
 *
 *   rho_in = state;  speed_in = i v_k source;  [SA: conv_in = c_k source]   (interleaved complex)
 *   synthesise every slot                         (the basis's FFTW plans, called back)
 *   X = speed [/ conv] [/ s];  max |X|;  flux = rho X
 *   analyse flux;  return i w_k analysis         (i w_k = -i k / N dealiased; a new array)
 *
 * The complex products use numpy's formula on the scheme's own multiplier arrays (see times());
 * each grid operation is one IEEE operation per point, in numpy's order; so both paths give the
 * same bits.  Compiled without fast-math or contraction.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

/* The hot loops get an AVX2 and an AVX-512 clone chosen at load time (GCC / clang on x86-64 Linux):
 * the same operations in wider registers, so the same bits (no contraction: -ffp-contract=off). */
#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define HOT __attribute__((target_clones("default", "avx2", "avx512f")))
#endif
#endif
#ifndef HOT
#define HOT
#endif

/* out = w s, complex, with numpy's formula (re = ar br - ai bi, im = ar bi + ai br): every multiplier
 * here has one part zero (+0 or -0), so a product with it is exact and the result, signed zeros
 * included, is numpy's whether numpy fuses the other product and sum or not. */
HOT static void times(double *restrict out, const double *restrict w, const double *restrict s, Py_ssize_t m) {
    for (Py_ssize_t k = 0; k < 2 * m; k += 2) {
        const double ar = s[k], ai = s[k + 1], br = w[k], bi = w[k + 1];
        out[k] = ar * br - ai * bi;
        out[k + 1] = ar * bi + ai * br;
    }
}

HOT static void divide(double *restrict x, const double *restrict by, Py_ssize_t n) {
    for (Py_ssize_t j = 0; j < n; j++) x[j] = x[j] / by[j];
}

HOT static void divide_scalar(double *restrict x, double by, Py_ssize_t n) {
    for (Py_ssize_t j = 0; j < n; j++) x[j] = x[j] / by;
}

#define LANES 8
/* flux = rho x; returns max |x| over the non-NaN entries (independent lanes, so it vectorises) */
HOT static double flux_and_max(double *restrict flux, const double *restrict rho, const double *restrict x,
                               Py_ssize_t n) {
    double lane[LANES] = {0.0};
    Py_ssize_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int i = 0; i < LANES; i++) {
            const double a = fabs(x[j + i]);
            lane[i] = a > lane[i] ? a : lane[i];
            flux[j + i] = rho[j + i] * x[j + i];
        }
    double largest = 0.0;
    for (; j < n; j++) {
        const double a = fabs(x[j]);
        largest = a > largest ? a : largest;
        flux[j] = rho[j] * x[j];
    }
    for (int i = 0; i < LANES; i++) largest = lane[i] > largest ? lane[i] : largest;
    return largest;
}

typedef struct {
    PyObject_HEAD
    PyObject *keep;            /* tuple: the arrays and plans below stay alive with the kernel */
    Py_ssize_t modes, points;  /* complex coefficients N/2 + 1, grid points N */
    int ratio;                 /* SA: X = speed / conv */
    double *rho_in, *speed_in, *conv_in;   /* synthesis inputs (conv_in NULL for USA) */
    const double *rho, *speed, *conv;      /* synthesis outputs */
    double *flux;                          /* analysis input */
    const double *flux_hat;                /* analysis output */
    const double *conv_k, *velocity_k, *divergence_k;  /* complex multipliers (c, i v, i w) */
    PyObject *synthesise[3], *analyse;     /* bound execute methods */
    int slots;
    double max_speed;
} Kernel;

static int contiguous(PyObject *a, int typenum, Py_ssize_t size, const char *what) {
    if (!PyArray_Check(a) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a) ||
        PyArray_TYPE((PyArrayObject *)a) != typenum || PyArray_SIZE((PyArrayObject *)a) != size) {
        PyErr_Format(PyExc_ValueError, "circle kernel: %s must be a contiguous array of %zd %s",
                     what, size, typenum == NPY_CDOUBLE ? "complex128" : "float64");
        return 0;
    }
    return 1;
}

static double *data(PyObject *a) { return (double *)PyArray_DATA((PyArrayObject *)a); }

static void Kernel_dealloc(Kernel *self) {
    Py_XDECREF(self->keep);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* CircleKernel(inputs, outputs, flux, flux_hat, conv_k, velocity_k, divergence_k,
 *              synthesise, analyse); the multipliers complex128
 * inputs/outputs: tuples of 2 (USA: rho, speed) or 3 (SA: rho, speed, conv) buffers;
 * synthesise: a tuple of the matching execute callables; analyse: the analysis's execute. */
static int Kernel_init(Kernel *self, PyObject *args, PyObject *kwds) {
    PyObject *inputs, *outputs, *flux, *flux_hat, *conv_k, *velocity_k, *divergence_k, *synth, *analyse;
    if (!PyArg_ParseTuple(args, "O!O!OOOOOO!O", &PyTuple_Type, &inputs, &PyTuple_Type, &outputs, &flux,
                          &flux_hat, &conv_k, &velocity_k, &divergence_k, &PyTuple_Type, &synth, &analyse))
        return -1;
    Py_ssize_t slots = PyTuple_GET_SIZE(inputs);
    if ((slots != 2 && slots != 3) || PyTuple_GET_SIZE(outputs) != slots || PyTuple_GET_SIZE(synth) != slots) {
        PyErr_SetString(PyExc_ValueError, "circle kernel: 2 or 3 synthesis slots, inputs, outputs and plans alike");
        return -1;
    }
    if (!contiguous(flux, NPY_DOUBLE, PyArray_SIZE((PyArrayObject *)flux), "flux")) return -1;
    Py_ssize_t n = PyArray_SIZE((PyArrayObject *)flux), m = n / 2 + 1;
    if (!contiguous(flux_hat, NPY_CDOUBLE, m, "flux_hat") || !contiguous(conv_k, NPY_CDOUBLE, m, "conv_k") ||
        !contiguous(velocity_k, NPY_CDOUBLE, m, "velocity_k") ||
        !contiguous(divergence_k, NPY_CDOUBLE, m, "divergence_k"))
        return -1;
    for (Py_ssize_t j = 0; j < slots; j++) {
        if (!contiguous(PyTuple_GET_ITEM(inputs, j), NPY_CDOUBLE, m, "a synthesis input") ||
            !contiguous(PyTuple_GET_ITEM(outputs, j), NPY_DOUBLE, n, "a synthesis output"))
            return -1;
        if (!PyCallable_Check(PyTuple_GET_ITEM(synth, j))) {
            PyErr_SetString(PyExc_TypeError, "circle kernel: synthesise must hold callables");
            return -1;
        }
    }
    if (!PyCallable_Check(analyse)) {
        PyErr_SetString(PyExc_TypeError, "circle kernel: analyse must be callable");
        return -1;
    }
    PyObject *keep = PyTuple_Pack(9, inputs, outputs, flux, flux_hat, conv_k, velocity_k, divergence_k, synth, analyse);
    if (keep == NULL) return -1;
    Py_XSETREF(self->keep, keep);
    self->slots = (int)slots;
    self->ratio = slots == 3;
    self->modes = m;
    self->points = n;
    self->rho_in = data(PyTuple_GET_ITEM(inputs, 0));
    self->speed_in = data(PyTuple_GET_ITEM(inputs, 1));
    self->conv_in = slots == 3 ? data(PyTuple_GET_ITEM(inputs, 2)) : NULL;
    self->rho = data(PyTuple_GET_ITEM(outputs, 0));
    self->speed = data(PyTuple_GET_ITEM(outputs, 1));
    self->conv = slots == 3 ? data(PyTuple_GET_ITEM(outputs, 2)) : NULL;
    self->flux = data(flux);
    self->flux_hat = data(flux_hat);
    self->conv_k = data(conv_k);
    self->velocity_k = data(velocity_k);
    self->divergence_k = data(divergence_k);
    for (Py_ssize_t j = 0; j < slots; j++) self->synthesise[j] = PyTuple_GET_ITEM(synth, j);
    self->analyse = analyse;
    self->max_speed = 0.0;
    return 0;
}

static int call(PyObject *fn) {
    PyObject *r = PyObject_CallNoArgs(fn);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* a contiguous complex128 array of whole rows of m modes (the state, or a leading axis of slices) */
static int rows_of(PyObject *a, Py_ssize_t m, Py_ssize_t size, const char *what) {
    if (!PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a) || PyArray_TYPE((PyArrayObject *)a) != NPY_CDOUBLE ||
        PyArray_SIZE((PyArrayObject *)a) != size || size == 0 || size % m != 0) {
        PyErr_Format(PyExc_ValueError, "circle kernel: %s must be a contiguous complex128 array of rows of %zd modes",
                     what, m);
        return 0;
    }
    return 1;
}

static PyObject *Kernel_rhs(Kernel *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "rhs(state, divisor[, source])");
        return NULL;
    }
    if (self->keep == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "circle kernel: not initialised");
        return NULL;
    }
    const Py_ssize_t m = self->modes, n = self->points;
    const double divisor = PyFloat_AsDouble(args[1]);
    if (divisor == -1.0 && PyErr_Occurred()) return NULL;
    /* the state itself when it is a contiguous complex128 array (the steppers' case), else a copy */
    PyObject *state = PyArray_FROM_OTF(args[0], NPY_CDOUBLE, NPY_ARRAY_IN_ARRAY);
    if (state == NULL) return NULL;
    const Py_ssize_t size = PyArray_SIZE((PyArrayObject *)state);
    if (!rows_of(state, m, size, "state")) {
        Py_DECREF(state);
        return NULL;
    }
    /* the field's density: the state itself, or the given source (same layout) */
    PyObject *source = NULL;
    const double *s = data(state), *f = s;
    if (nargs == 3) {
        source = PyArray_FROM_OTF(args[2], NPY_CDOUBLE, NPY_ARRAY_IN_ARRAY);
        if (source == NULL || !rows_of(source, m, size, "source")) {
            Py_DECREF(state);
            Py_XDECREF(source);
            return NULL;
        }
        f = data(source);
    }
    PyObject *out = PyArray_SimpleNew(PyArray_NDIM((PyArrayObject *)state), PyArray_DIMS((PyArrayObject *)state),
                                      NPY_CDOUBLE);
    double largest = 0.0;
    /* each row (one density, or one slice of the causal kinetic PDE) in turn, through the same buffers */
    for (Py_ssize_t row = 0; out != NULL && row < size / m; row++) {
        const Py_ssize_t at = 2 * m * row;
        /* spectral products: rho_in = state, speed_in = i v source, conv_in = c source */
        memcpy(self->rho_in, s + at, (size_t)m * 2 * sizeof(double));
        times(self->speed_in, self->velocity_k, f + at, m);
        if (self->conv_in != NULL) times(self->conv_in, self->conv_k, f + at, m);
        int failed = 0;
        for (int j = 0; j < self->slots && !failed; j++) failed = call(self->synthesise[j]) < 0;

        /* X = speed [/ conv] [/ divisor] in place, max |X|, flux = rho X */
        double *x = (double *)self->speed;
        if (!failed) {
            if (self->ratio) divide(x, self->conv, n);
            if (divisor != 1.0) divide_scalar(x, divisor, n);
            const double fastest = flux_and_max(self->flux, self->rho, x, n);
            largest = fastest > largest ? fastest : largest;
            failed = call(self->analyse) < 0;
        }
        if (failed) {
            Py_CLEAR(out);
            break;
        }
        /* the divergence multiplier i w = -i k / N (dealiased) */
        times((double *)data(out) + at, self->divergence_k, self->flux_hat, m);
    }
    Py_DECREF(state);
    Py_XDECREF(source);
    self->max_speed = largest;
    return out;
}

static PyMethodDef Kernel_methods[] = {
    {"rhs", (PyCFunction)(void (*)(void))Kernel_rhs, METH_FASTCALL,
     "rhs(state, divisor[, source]) -> d state/dt (a new array); see the module comment."},
    {NULL, NULL, 0, NULL}};

static PyMemberDef Kernel_members[] = {
    {"max_speed", T_DOUBLE, offsetof(Kernel, max_speed), READONLY, "max |X| of the last rhs (NaN entries skipped)"},
    {NULL, 0, 0, 0, NULL}};

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "solvers._circle_kernel.CircleKernel",
    .tp_basicsize = sizeof(Kernel),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Fused pointwise work of the circle right-hand side (solvers/schemes/circle_kernel.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Kernel_init,
    .tp_dealloc = (destructor)Kernel_dealloc,
    .tp_methods = Kernel_methods,
    .tp_members = Kernel_members,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_circle_kernel",
                                    "Fused pointwise work of the circle right-hand side.", -1, NULL};

PyMODINIT_FUNC PyInit__circle_kernel(void) {
    import_array();
    if (PyType_Ready(&KernelType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&KernelType);
    if (PyModule_AddObject(m, "CircleKernel", (PyObject *)&KernelType) < 0) {
        Py_DECREF(&KernelType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
