/*
 * The circle finite-volume right-hand side in one call (solvers/schemes/finite_volume.py, MATH.md §2.5).  Optional:
 * solvers/schemes/fv_kernel.py falls back to numpy, with the same values, when this extension was not built.
 *
 * One call of FvKernel.rhs(rho, divisor, points) does what CircleFiniteVolume's numpy path does:
 *
 *   analysis_in = rho;  analyse                               (the basis's FFTW plan, called back)
 *   v_k = spectrum[source_k] (conjugated where folded),  k = 0..M
 *   slot s (0: numerator, 1: denominator, SA only):
 *       in_s = v re_s + v im_s [+ P pre_s + P pim_s];  zero above M;  synthesise s
 *   u_j = out_0[j stride] [/ out_1[j stride], clipped to [-1, 1]] [/ divisor]     (face j, u_N = u_0)
 *   the positivity-cut central reconstruction, upwind and diffusive fluxes, max_i r_i, -(F_{i+1/2} - F_{i-1/2}) / V_i
 *
 * Every multiplier has one part zero (re_s real, im_s imaginary), so each complex product is numpy's whatever
 * numpy fuses; each grid operation is one IEEE operation per point in numpy's order, and maximum / minimum / clip
 * propagate NaN as numpy does.  Compiled without fast-math or contraction.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

/* The grid loops get an AVX2 and an AVX-512 clone chosen at load time (GCC / clang on x86-64 Linux): the same
 * operations in wider registers, so the same bits (no contraction: -ffp-contract=off). */
#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define HOT __attribute__((target_clones("default", "avx2", "avx512f")))
#endif
#endif
#ifndef HOT
#define HOT
#endif

#define LANES 8
/* numpy's maximum / minimum: a NaN in either argument is returned */
static inline double np_max(double a, double b) { return (a >= b || a != a) ? a : b; }
static inline double np_min(double a, double b) { return (a <= b || a != a) ? a : b; }
/* the same against a constant c (never NaN), written so that the loops vectorise */
static inline double np_max_c(double a, double c) { return a < c ? c : a; }
static inline double np_min_c(double a, double c) { return a > c ? c : a; }

/* out (+)= v w, complex, numpy's formula (re = ar br - ai bi, im = ar bi + ai br) */
static inline void product(double *out, const double *v, const double *w, int add) {
    const double re = v[0] * w[0] - v[1] * w[1], im = v[0] * w[1] + v[1] * w[0];
    if (add) {
        out[0] = out[0] + re;
        out[1] = out[1] + im;
    } else {
        out[0] = re;
        out[1] = im;
    }
}

enum { SOURCE, CONJUGATE, GEOMETRY };
/* geometry rows: inv_spacing (n + 1), w_left, w_right, d_west, d_east, 1 / d_west, -1 / d_east (n), areas (n + 1),
 * out_east, minus_out_west, 1 / volumes (n), diff_coeff (n + 1), diff_rate (n) */
enum { INV_SPACING, W_LEFT, W_RIGHT, D_WEST, D_EAST, INV_D_WEST, MINUS_INV_D_EAST, AREAS, OUT_EAST, MINUS_OUT_WEST,
       INV_VOLUMES, DIFF_COEFF, DIFF_RATE, ROWS };

typedef struct {
    PyObject_HEAD
    PyObject *keep;
    Py_ssize_t n, modes, band, stride;   /* cells, synthesis modes (size / 2 + 1), M + 1, size / n */
    int slots;                           /* 1 (USA) or 2 (SA: the ratio) */
    double nu;
    double *analysis_in;
    const double *spectrum;
    double *synth_in[2];
    const double *synth_out[2];
    const long long *source;
    const unsigned char *conjugate;
    const double *re[2], *im[2], *point_re[2], *point_im[2];
    const double *geometry[ROWS];
    double *jumps, *left, *right, *flux;  /* n + 1 each: what the numpy path leaves in FiniteVolume1D's buffers */
    PyObject *synthesise[2], *analyse;
    double max_rate;
} Kernel;

static int check(PyObject *a, int typenum, Py_ssize_t size, const char *what) {
    if (!PyArray_Check(a) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a) ||
        PyArray_TYPE((PyArrayObject *)a) != typenum || PyArray_SIZE((PyArrayObject *)a) != size) {
        PyErr_Format(PyExc_ValueError, "fv kernel: %s must be a contiguous array of %zd elements of type %d", what,
                     size, typenum);
        return 0;
    }
    return 1;
}

static double *data(PyObject *a) { return (double *)PyArray_DATA((PyArrayObject *)a); }

static void Kernel_dealloc(Kernel *self) {
    Py_XDECREF(self->keep);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* FvKernel(analysis_in, spectrum, synth_in, synth_out, source, conjugate, tables, geometry, work, nu,
 *          synthesise, analyse)
 * synth_in / synth_out / synthesise: tuples of 1 (USA) or 2 (SA) slots; tables: a tuple of 4 tuples (re, im,
 * point_re, point_im), each of `slots` complex128 arrays of M + 1; geometry: a tuple of ROWS float64 arrays;
 * work: a tuple (jumps, left, right, flux) of float64 arrays of n + 1. */
static int Kernel_init(Kernel *self, PyObject *args, PyObject *kwds) {
    PyObject *analysis_in, *spectrum, *synth_in, *synth_out, *source, *conjugate, *tables, *geometry, *work,
        *synth, *analyse;
    double nu;
    if (!PyArg_ParseTuple(args, "OOO!O!OOO!O!O!dO!O", &analysis_in, &spectrum, &PyTuple_Type, &synth_in,
                          &PyTuple_Type, &synth_out, &source, &conjugate, &PyTuple_Type, &tables, &PyTuple_Type,
                          &geometry, &PyTuple_Type, &work, &nu, &PyTuple_Type, &synth, &analyse))
        return -1;
    if (!PyArray_Check(analysis_in)) {
        PyErr_SetString(PyExc_ValueError, "fv kernel: analysis_in must be an array");
        return -1;
    }
    const Py_ssize_t n = PyArray_SIZE((PyArrayObject *)analysis_in);
    const Py_ssize_t slots = PyTuple_GET_SIZE(synth_in);
    if ((slots != 1 && slots != 2) || PyTuple_GET_SIZE(synth_out) != slots || PyTuple_GET_SIZE(synth) != slots ||
        PyTuple_GET_SIZE(tables) != 4 || PyTuple_GET_SIZE(geometry) != ROWS || PyTuple_GET_SIZE(work) != 4) {
        PyErr_SetString(PyExc_ValueError, "fv kernel: 1 or 2 slots alike, 4 tables, the geometry rows, 4 work arrays");
        return -1;
    }
    if (!check(analysis_in, NPY_DOUBLE, n, "analysis_in") || !check(spectrum, NPY_CDOUBLE, n / 2 + 1, "spectrum"))
        return -1;
    PyObject *first = PyTuple_GET_ITEM(synth_out, 0);
    if (!PyArray_Check(first)) {
        PyErr_SetString(PyExc_ValueError, "fv kernel: synth_out must hold arrays");
        return -1;
    }
    const Py_ssize_t size = PyArray_SIZE((PyArrayObject *)first);
    if (size % n != 0) {
        PyErr_SetString(PyExc_ValueError, "fv kernel: the synthesis size must be a multiple of n");
        return -1;
    }
    const Py_ssize_t band = PyArray_Check(source) ? PyArray_SIZE((PyArrayObject *)source) : 0;
    if (!check(source, NPY_INT64, band, "source") || !check(conjugate, NPY_BOOL, band, "conjugate")) return -1;
    if (band < 1 || band > size / 2 + 1) {
        PyErr_SetString(PyExc_ValueError, "fv kernel: 1 <= M + 1 <= size / 2 + 1");
        return -1;
    }
    for (Py_ssize_t s = 0; s < slots; s++) {
        if (!check(PyTuple_GET_ITEM(synth_in, s), NPY_CDOUBLE, size / 2 + 1, "a synthesis input") ||
            !check(PyTuple_GET_ITEM(synth_out, s), NPY_DOUBLE, size, "a synthesis output"))
            return -1;
        if (!PyCallable_Check(PyTuple_GET_ITEM(synth, s))) {
            PyErr_SetString(PyExc_TypeError, "fv kernel: synthesise must hold callables");
            return -1;
        }
    }
    for (int t = 0; t < 4; t++) {
        PyObject *row = PyTuple_GET_ITEM(tables, t);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != slots) {
            PyErr_SetString(PyExc_ValueError, "fv kernel: each table holds one array per slot");
            return -1;
        }
        for (Py_ssize_t s = 0; s < slots; s++)
            if (!check(PyTuple_GET_ITEM(row, s), NPY_CDOUBLE, band, "a table")) return -1;
    }
    static const int edges[ROWS] = {1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0};   /* rows of n + 1 */
    for (int r = 0; r < ROWS; r++)
        if (!check(PyTuple_GET_ITEM(geometry, r), NPY_DOUBLE, n + edges[r], "a geometry row")) return -1;
    for (int w = 0; w < 4; w++)
        if (!check(PyTuple_GET_ITEM(work, w), NPY_DOUBLE, n + 1, "a work array")) return -1;
    if (!PyCallable_Check(analyse)) {
        PyErr_SetString(PyExc_TypeError, "fv kernel: analyse must be callable");
        return -1;
    }
    PyObject *keep = PyTuple_Pack(11, analysis_in, spectrum, synth_in, synth_out, source, conjugate, tables,
                                  geometry, work, synth, analyse);
    if (keep == NULL) return -1;
    Py_XSETREF(self->keep, keep);
    self->n = n;
    self->modes = size / 2 + 1;
    self->band = band;
    self->stride = size / n;
    self->slots = (int)slots;
    self->nu = nu;
    self->analysis_in = data(analysis_in);
    self->spectrum = data(spectrum);
    self->source = (const long long *)PyArray_DATA((PyArrayObject *)source);
    self->conjugate = (const unsigned char *)PyArray_DATA((PyArrayObject *)conjugate);
    for (Py_ssize_t s = 0; s < slots; s++) {
        self->synth_in[s] = data(PyTuple_GET_ITEM(synth_in, s));
        self->synth_out[s] = data(PyTuple_GET_ITEM(synth_out, s));
        self->synthesise[s] = PyTuple_GET_ITEM(synth, s);
        self->re[s] = data(PyTuple_GET_ITEM(PyTuple_GET_ITEM(tables, 0), s));
        self->im[s] = data(PyTuple_GET_ITEM(PyTuple_GET_ITEM(tables, 1), s));
        self->point_re[s] = data(PyTuple_GET_ITEM(PyTuple_GET_ITEM(tables, 2), s));
        self->point_im[s] = data(PyTuple_GET_ITEM(PyTuple_GET_ITEM(tables, 3), s));
    }
    for (int r = 0; r < ROWS; r++) self->geometry[r] = data(PyTuple_GET_ITEM(geometry, r));
    self->jumps = data(PyTuple_GET_ITEM(work, 0));
    self->left = data(PyTuple_GET_ITEM(work, 1));
    self->right = data(PyTuple_GET_ITEM(work, 2));
    self->flux = data(PyTuple_GET_ITEM(work, 3));
    self->analyse = analyse;
    self->max_rate = 0.0;
    return 0;
}

static int call(PyObject *fn) {
    PyObject *r = PyObject_CallNoArgs(fn);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* u_j = numerator[j stride] [/ denominator[j stride], clipped to [-1, 1]] [/ divisor], u_n = u_0 */
HOT static void faces(Py_ssize_t n, Py_ssize_t stride, const double *restrict numerator,
                      const double *restrict denominator, double divisor, double *restrict u) {
    if (stride == 1)
        memcpy(u, numerator, (size_t)n * sizeof(double));
    else
        for (Py_ssize_t j = 0; j < n; j++) u[j] = numerator[j * stride];
    if (denominator != NULL) {
        for (Py_ssize_t j = 0; j < n; j++) u[j] = u[j] / denominator[j * stride];
        for (Py_ssize_t j = 0; j < n; j++) u[j] = np_min_c(np_max_c(u[j], -1.0), 1.0);
    }
    if (divisor != 1.0)
        for (Py_ssize_t j = 0; j < n; j++) u[j] = u[j] / divisor;
    u[n] = u[0];
}

/* the face velocities u_0 .. u_n into u (u_n = u_0); -1 on a failed transform */
static int face_velocity(Kernel *self, const double *rho, double divisor, const double *points, double *u) {
    const Py_ssize_t n = self->n, band = self->band, stride = self->stride;
    memcpy(self->analysis_in, rho, (size_t)n * sizeof(double));
    if (call(self->analyse) < 0) return -1;
    for (int s = 0; s < self->slots; s++) {
        double *in = self->synth_in[s];
        for (Py_ssize_t k = 0; k < band; k++) {
            const double *at = self->spectrum + 2 * self->source[k];
            const double v[2] = {at[0], self->conjugate[k] ? -at[1] : at[1]};
            product(in + 2 * k, v, self->re[s] + 2 * k, 0);
            product(in + 2 * k, v, self->im[s] + 2 * k, 1);
            if (points != NULL) {
                product(in + 2 * k, points + 2 * k, self->point_re[s] + 2 * k, 1);
                product(in + 2 * k, points + 2 * k, self->point_im[s] + 2 * k, 1);
            }
        }
        memset(in + 2 * band, 0, (size_t)(self->modes - band) * 2 * sizeof(double));
        if (call(self->synthesise[s]) < 0) return -1;
    }
    faces(n, stride, self->synth_out[0], self->slots == 2 ? self->synth_out[1] : NULL, divisor, u);
    return 0;
}

/* the positivity-cut central reconstruction: face states right (rho^W_i at face i) and left (rho^E_i at face
 * i + 1), as FiniteVolume1D.reconstruct; jumps[j] = rho_j - rho_{j-1} */
HOT static void reconstruct(Py_ssize_t n, const double *restrict rho, const double *const *g, double *restrict jumps,
                            double *restrict left, double *restrict right) {
    const double *restrict inv_spacing = g[INV_SPACING], *restrict w_left = g[W_LEFT], *restrict w_right = g[W_RIGHT];
    const double *restrict d_west = g[D_WEST], *restrict d_east = g[D_EAST], *restrict inv_d_west = g[INV_D_WEST];
    const double *restrict minus_inv_d_east = g[MINUS_INV_D_EAST];
    jumps[0] = rho[0] - rho[n - 1];
    for (Py_ssize_t j = 1; j < n; j++) jumps[j] = rho[j] - rho[j - 1];
    jumps[n] = rho[0] - rho[n - 1];
    for (Py_ssize_t i = 0; i < n; i++) {
        double slope = (jumps[i] * inv_spacing[i]) * w_left[i];
        slope = slope + (jumps[i + 1] * inv_spacing[i + 1]) * w_right[i];
        slope = np_max(slope, rho[i] * minus_inv_d_east[i]);
        slope = np_min(slope, rho[i] * inv_d_west[i]);
        right[i] = np_max_c(rho[i] - slope * d_west[i], 0.0);
        left[i + 1] = np_max_c(rho[i] + slope * d_east[i], 0.0);
    }
    left[0] = left[n];
    right[n] = right[0];
}

/* upwind and diffusive fluxes, max_i r_i and -(F_{i+1/2} - F_{i-1/2}) / V_i into out, as FiniteVolume1D.divergence */
HOT static double fluxes(Py_ssize_t n, const double *restrict u, const double *const *g, double nu,
                         const double *restrict jumps, const double *restrict left, const double *restrict right,
                         double *restrict flux, double *restrict out) {
    const double *restrict areas = g[AREAS], *restrict diff_coeff = g[DIFF_COEFF], *restrict diff_rate = g[DIFF_RATE];
    const double *restrict out_east = g[OUT_EAST], *restrict minus_out_west = g[MINUS_OUT_WEST];
    const double *restrict inv_volumes = g[INV_VOLUMES];
    for (Py_ssize_t j = 0; j <= n; j++) {
        double f = np_max_c(u[j], 0.0) * left[j];
        f = f + np_min_c(u[j], 0.0) * right[j];
        flux[j] = f * areas[j];
    }
    if (nu > 0)
        for (Py_ssize_t j = 0; j <= n; j++) flux[j] = flux[j] - jumps[j] * diff_coeff[j];
    for (Py_ssize_t i = 0; i < n; i++) out[i] = (flux[i] - flux[i + 1]) * inv_volumes[i];
    /* max_i r_i in independent lanes (vectorised); NaN if any r_i is, as numpy's max */
    double lane[LANES], seen[LANES];
    for (int l = 0; l < LANES; l++) lane[l] = -INFINITY, seen[l] = 0.0;
    Py_ssize_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) {
            double rate = np_max_c(u[i + l + 1], 0.0) * out_east[i + l];
            rate = np_max(rate, np_min_c(u[i + l], 0.0) * minus_out_west[i + l]);
            if (nu > 0) rate = rate + diff_rate[i + l];
            seen[l] = rate != rate ? 1.0 : seen[l];
            lane[l] = rate > lane[l] ? rate : lane[l];
        }
    double largest = -INFINITY, nan = 0.0;
    for (; i < n; i++) {
        double rate = np_max_c(u[i + 1], 0.0) * out_east[i];
        rate = np_max(rate, np_min_c(u[i], 0.0) * minus_out_west[i]);
        if (nu > 0) rate = rate + diff_rate[i];
        nan = rate != rate ? 1.0 : nan;
        largest = rate > largest ? rate : largest;
    }
    for (int l = 0; l < LANES; l++) {
        largest = lane[l] > largest ? lane[l] : largest;
        nan = seen[l] > nan ? seen[l] : nan;
    }
    return nan > 0 ? NAN : largest;
}

static void divergence(Kernel *self, const double *rho, const double *u, double *out) {
    reconstruct(self->n, rho, self->geometry, self->jumps, self->left, self->right);
    self->max_rate = fluxes(self->n, u, self->geometry, self->nu, self->jumps, self->left, self->right, self->flux, out);
}

static PyObject *Kernel_rhs(Kernel *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "rhs(rho, divisor, points)");
        return NULL;
    }
    if (self->keep == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "fv kernel: not initialised");
        return NULL;
    }
    const double divisor = PyFloat_AsDouble(args[1]);
    if (divisor == -1.0 && PyErr_Occurred()) return NULL;
    PyObject *rho = PyArray_FROM_OTF(args[0], NPY_DOUBLE, NPY_ARRAY_IN_ARRAY);
    if (rho == NULL) return NULL;
    if (PyArray_SIZE((PyArrayObject *)rho) != self->n) {
        PyErr_Format(PyExc_ValueError, "fv kernel: rho must hold %zd cells", self->n);
        Py_DECREF(rho);
        return NULL;
    }
    PyObject *points = NULL;
    if (args[2] != Py_None) {
        points = PyArray_FROM_OTF(args[2], NPY_CDOUBLE, NPY_ARRAY_IN_ARRAY);
        if (points == NULL || PyArray_SIZE((PyArrayObject *)points) < self->band) {
            if (points != NULL) PyErr_Format(PyExc_ValueError, "fv kernel: points must hold >= %zd modes", self->band);
            Py_DECREF(rho);
            Py_XDECREF(points);
            return NULL;
        }
    }
    npy_intp cells = self->n, faces = self->n + 1;
    PyObject *out = PyArray_SimpleNew(1, &cells, NPY_DOUBLE);
    PyObject *u = out == NULL ? NULL : PyArray_SimpleNew(1, &faces, NPY_DOUBLE);
    if (u != NULL && face_velocity(self, data(rho), divisor, points == NULL ? NULL : data(points), data(u)) == 0)
        divergence(self, data(rho), data(u), data(out));
    else
        Py_CLEAR(out);
    Py_DECREF(rho);
    Py_XDECREF(points);
    Py_XDECREF(u);
    return out;
}

static PyMethodDef Kernel_methods[] = {
    {"rhs", (PyCFunction)(void (*)(void))Kernel_rhs, METH_FASTCALL,
     "rhs(rho, divisor, points) -> d rho/dt (a new array); see the module comment."},
    {NULL, NULL, 0, NULL}};

static PyMemberDef Kernel_members[] = {
    {"max_rate", T_DOUBLE, offsetof(Kernel, max_rate), READONLY, "max_i r_i of the last rhs (NaN if any is)"},
    {NULL, 0, 0, 0, NULL}};

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "solvers._fv_kernel.FvKernel",
    .tp_basicsize = sizeof(Kernel),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The circle finite-volume right-hand side in one call (solvers/schemes/fv_kernel.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Kernel_init,
    .tp_dealloc = (destructor)Kernel_dealloc,
    .tp_methods = Kernel_methods,
    .tp_members = Kernel_members,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fv_kernel",
                                    "The circle finite-volume right-hand side in one call.", -1, NULL};

PyMODINIT_FUNC PyInit__fv_kernel(void) {
    import_array();
    if (PyType_Ready(&KernelType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&KernelType);
    if (PyModule_AddObject(m, "FvKernel", (PyObject *)&KernelType) < 0) {
        Py_DECREF(&KernelType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
