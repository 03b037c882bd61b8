/*
 * The clusters of a measure on the circle in one compiled call (MATH.md §10; meanfield/circle_clusters.py).
 * Optional: without this extension meanfield.cluster_detection computes the same observable with numpy.
 *
 * clusters(coefficients, values, angles, masses, beta, prominence, concentration, least_mass, flat, refine)
 *
 *   coefficients  complex128 (band + 1,): A_k, the exp(-beta)-scaled Fourier coefficients of the attention field
 *                 A(theta) = Re sum_k w_k A_k exp(i k theta), w_0 = 1, w_k = 2 (band < nodes / 2)
 *   values        float64 (nodes,): A at the sampling nodes 2 pi j / nodes (numpy's inverse FFT, the same bits as
 *                 the numpy path's field)
 *   angles        float64 (m,): the places of the masses (any real angles)
 *   masses        float64 (m,)
 *   least_mass    the smallest cluster mass (min_mass times the total)
 *   flat          the flatness fraction (cluster_detection.FLAT): a node within flat * max |A| of both neighbours
 *                 holds no cluster's mass (label -1); the ring's neighbours, 2 pi / nodes apart, are always
 *                 farther than attention_field.SAME_PLACE kernel widths, so both count in that test
 *   refine        refine every centre (else only those a decision refined)
 *
 * equispaced(angles, tol): whether every angle is within tol of angles[0] + (2 pi / n) j (attention_field's
 * test of a grid, which then gets its Fourier sums by a real FFT).
 *
 * clusters returns (centre (k, 2), concentration (k,), prominence (k,), mass (k,), basin_size (k,), labels (m,), tops (k,))
 * for the k clusters, heaviest first: the steps of meanfield.cluster_detection.clusters_of_field on the ring
 * graph of the nodes, on the same values, in the same order with the same tie rules (value then index; saddles
 * highest first, then by the pair of basins), so the two paths find the same basins and make the same decisions.
 * The refined maxima use the rotation recurrence for exp(i k theta), so centres and concentrations agree with
 * numpy's to rounding (about 1e-15), not bit for bit.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

typedef struct {
    const double *re, *im; /* coefficients */
    Py_ssize_t modes;      /* band + 1 */
    double beta, step;
} Series;

/* A, A' and A'' at theta from the series (exp(i k theta) by rotation, one sincos per call). */
static void series_at(const Series *s, double theta, double *value, double *first, double *second) {
    double c1 = cos(theta), s1 = sin(theta), c = 1.0, sn = 0.0;
    double v = 0.0, d1 = 0.0, d2 = 0.0;
    for (Py_ssize_t k = 0; k < s->modes; k++) {
        const double w = k == 0 ? 1.0 : 2.0, kk = (double)k;
        const double re = w * (s->re[k] * c - s->im[k] * sn), im = w * (s->re[k] * sn + s->im[k] * c);
        v += re;
        d1 -= kk * im;
        d2 -= kk * kk * re;
        const double cn = c * c1 - sn * s1;
        sn = sn * c1 + c * s1;
        c = cn;
    }
    *value = v;
    *first = d1;
    *second = d2;
}

/* The refined maximum near node j (Newton's method on A', steps kept within a node spacing) and -A''/(beta A). */
static void peak(const Series *s, Py_ssize_t node, double *angle, double *concentration) {
    double theta = s->step * (double)node, value, first, second;
    series_at(s, theta, &value, &first, &second);
    for (int iteration = 0; iteration < 8; iteration++) {
        const double move = second < 0 ? -first / second : INFINITY;
        if (fabs(move) > s->step) break;
        theta += move;
        series_at(s, theta, &value, &first, &second);
        if (fabs(move) < 1e-14) break;
    }
    *angle = theta;
    *concentration = -second / (s->beta * value);
}

typedef struct {
    Py_ssize_t a, b;
    double height;
} Pass;

static int pass_order(const void *x, const void *y) {
    const Pass *p = x, *q = y;
    if (p->height != q->height) return p->height > q->height ? -1 : 1;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

static Py_ssize_t find(Py_ssize_t *piece, Py_ssize_t a) {
    while (piece[a] != a) {
        piece[a] = piece[piece[a]];
        a = piece[a];
    }
    return a;
}

typedef struct {
    const Series *series;
    const double *values;
    const Py_ssize_t *peaks;
    double prominence, concentration;
    char *refined;
    double *angle, *peak_concentration;
} Decider;

static double peak_concentration(Decider *d, Py_ssize_t t) {
    if (!d->refined[t]) {
        peak(d->series, d->peaks[t], &d->angle[t], &d->peak_concentration[t]);
        d->refined[t] = 1;
    }
    return d->peak_concentration[t];
}

/* Whether territory t's maximum stands out over saddle (cluster_detection.clusters_of_field), and its rise. */
static int stands_out(Decider *d, Py_ssize_t t, double saddle, double *rise) {
    const double top = d->values[d->peaks[t]];
    *rise = top > 0 ? 1.0 - saddle / top : 0.0;
    return *rise >= d->prominence || peak_concentration(d, t) >= d->concentration;
}

static Py_ssize_t territory(Py_ssize_t *owner, Py_ssize_t e) {
    while (owner[e] != e) {
        owner[e] = owner[owner[e]];
        e = owner[e];
    }
    return e;
}

static const double *mass_order_key; /* for sorting kept territories: (-mass, peak node) */
static const Py_ssize_t *peak_order_key;
static int kept_order(const void *x, const void *y) {
    const Py_ssize_t s = *(const Py_ssize_t *)x, t = *(const Py_ssize_t *)y;
    if (mass_order_key[s] != mass_order_key[t]) return mass_order_key[s] > mass_order_key[t] ? -1 : 1;
    return (peak_order_key[s] > peak_order_key[t]) - (peak_order_key[s] < peak_order_key[t]);
}

static PyArrayObject *contiguous(PyObject *object, int type, const char *name) {
    PyArrayObject *array = (PyArrayObject *)PyArray_FROMANY(object, type, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (array == NULL) PyErr_Format(PyExc_ValueError, "circle clusters: %s must be a 1-D array", name);
    return array;
}

static PyObject *clusters(PyObject *self, PyObject *args) {
    PyObject *coefficient_object, *value_object, *angle_object, *mass_object;
    double beta, prominence, concentration, least_mass, flat;
    int refine;
    if (!PyArg_ParseTuple(args, "OOOOddddd" "p", &coefficient_object, &value_object, &angle_object, &mass_object,
                          &beta, &prominence, &concentration, &least_mass, &flat, &refine))
        return NULL;
    PyArrayObject *coefficient_array = contiguous(coefficient_object, NPY_CDOUBLE, "coefficients");
    PyArrayObject *angle_array = contiguous(angle_object, NPY_DOUBLE, "angles");
    PyArrayObject *mass_array = contiguous(mass_object, NPY_DOUBLE, "masses");
    PyArrayObject *value_array = contiguous(value_object, NPY_DOUBLE, "values");
    PyObject *result = NULL;
    if (coefficient_array == NULL || angle_array == NULL || mass_array == NULL || value_array == NULL) goto done;
    const Py_ssize_t modes = PyArray_DIM(coefficient_array, 0), m = PyArray_DIM(angle_array, 0),
                     n = PyArray_DIM(value_array, 0);
    if (PyArray_DIM(mass_array, 0) != m || n < 4 || n % 2 || modes < 1 || 2 * (modes - 1) >= n) {
        PyErr_SetString(PyExc_ValueError, "circle clusters: angles and masses must match; band < nodes / 2");
        goto done;
    }
    const double *coefficient = PyArray_DATA(coefficient_array), *angles = PyArray_DATA(angle_array),
                 *masses = PyArray_DATA(mass_array), *values = PyArray_DATA(value_array);
    const double two_pi = 2.0 * M_PI, step = two_pi / (double)n;

    double *re = NULL, *im, *node_mass = NULL, *basin_mass, *lowest, *closed, *angle, *peak_conc;
    Py_ssize_t *place = NULL, *up, *basin, *peaks, *owner, *piece, *final, *kept, *cluster_of;
    char *refined = NULL, *is_flat = NULL;
    Pass *passes = NULL;
    re = malloc(sizeof(double) * (size_t)modes * 2);
    node_mass = malloc(sizeof(double) * (size_t)n * 6);
    place = malloc(sizeof(Py_ssize_t) * ((size_t)m + 9 * (size_t)n));
    refined = calloc((size_t)n, 1);
    is_flat = calloc((size_t)n, 1);
    passes = malloc(sizeof(Pass) * 2 * (size_t)n);
    if (re == NULL || node_mass == NULL || place == NULL || refined == NULL || is_flat == NULL || passes == NULL) {
        PyErr_NoMemory();
        goto cleanup;
    }
    im = re + modes;
    basin_mass = node_mass + n;
    lowest = basin_mass + n;
    closed = lowest + n;
    angle = closed + n;
    peak_conc = angle + n;
    up = place + m;
    basin = up + n;
    peaks = basin + n;
    owner = peaks + n;
    piece = owner + n;
    final = piece + n;
    kept = final + n;
    cluster_of = kept + n;
    for (Py_ssize_t k = 0; k < modes; k++) {
        re[k] = coefficient[2 * k];
        im[k] = coefficient[2 * k + 1];
    }
    const Series series = {re, im, modes, beta, step};

    /* each place's node: rint(mod(angle, 2 pi) / step) mod n, numpy's mod (fmod, moved into [0, 2 pi)) */
    for (Py_ssize_t i = 0; i < m; i++) {
        double a = angles[i];
        if (!(a >= 0 && a < two_pi)) {
            a = fmod(a, two_pi);
            if (a != 0) {
                if (a < 0) a += two_pi;
            } else
                a = 0.0;
        }
        Py_ssize_t j = (Py_ssize_t)rint(a / step);
        place[i] = j >= n ? j - n : j;
    }
    /* steepest ascent on the ring: to the highest of self and both neighbours (value, then index) */
#define HIGHER(p, q) (values[p] > values[q] || (values[p] == values[q] && (p) > (q)))
    for (Py_ssize_t j = 0; j < n; j++) {
        const Py_ssize_t left = (j + n - 1) % n, right = (j + 1) % n;
        Py_ssize_t best = j;
        if (HIGHER(left, best)) best = left;
        if (HIGHER(right, best)) best = right;
        up[j] = best;
    }
    Py_ssize_t count = 0;
    for (Py_ssize_t j = 0; j < n; j++)
        if (up[j] == j) {
            basin[j] = count; /* a peak's basin index, in node order (numpy's unique) */
            peaks[count++] = j;
        }
    for (Py_ssize_t j = 0; j < n; j++) {
        Py_ssize_t r = j;
        while (up[r] != r) r = up[r];
        up[j] = r;
    }
    for (Py_ssize_t j = 0; j < n; j++) basin[j] = basin[up[j]];
    for (Py_ssize_t j = 0; j < n; j++) node_mass[j] = 0.0;
    for (Py_ssize_t i = 0; i < m; i++) node_mass[place[i]] += masses[i];
    /* flat nodes (A within flat * max|A| of both neighbours: ascent decided by rounding) hold no cluster's mass */
    double largest = 0.0;
    for (Py_ssize_t j = 0; j < n; j++)
        if (fabs(values[j]) > largest) largest = fabs(values[j]);
    const double level = flat * largest;
    for (Py_ssize_t j = 0; j < n; j++) {
        const double v = values[j];
        is_flat[j] = fabs(values[(j + n - 1) % n] - v) <= level && fabs(values[(j + 1) % n] - v) <= level;
        if (is_flat[j]) node_mass[j] = 0.0;
    }
    for (Py_ssize_t e = 0; e < count; e++) basin_mass[e] = 0.0;
    for (Py_ssize_t j = 0; j < n; j++) basin_mass[basin[j]] += node_mass[j];

    /* the highest pass between each pair of touching basins, highest first */
    Py_ssize_t pass_count = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        const Py_ssize_t v = (j + 1) % n;
        if (basin[j] == basin[v]) continue;
        const Py_ssize_t a = basin[j] < basin[v] ? basin[j] : basin[v], b = basin[j] < basin[v] ? basin[v] : basin[j];
        const double height = values[j] < values[v] ? values[j] : values[v];
        Py_ssize_t q = 0;
        while (q < pass_count && !(passes[q].a == a && passes[q].b == b)) q++;
        if (q == pass_count) {
            passes[pass_count].a = a;
            passes[pass_count].b = b;
            passes[pass_count++].height = height;
        } else if (height > passes[q].height)
            passes[q].height = height;
    }
    qsort(passes, (size_t)pass_count, sizeof(Pass), pass_order);

    Decider decider = {&series, values, peaks, prominence, concentration, refined, angle, peak_conc};
    for (Py_ssize_t e = 0; e < count; e++) {
        owner[e] = piece[e] = e;
        closed[e] = NAN;
        kept[e] = 0; /* whether territory e stands out */
    }
    for (Py_ssize_t q = 0; q < pass_count; q++) {
        Py_ssize_t a = passes[q].a, b = passes[q].b, pa = find(piece, a), pb = find(piece, b);
        if (pa == pb) continue;
        const double va = values[peaks[pa]], vb = values[peaks[pb]];
        if (va < vb || (va == vb && peaks[pa] < peaks[pb])) {
            Py_ssize_t swap = pa;
            pa = pb;
            pb = swap;
            swap = a;
            a = b;
            b = swap;
        }
        double rise;
        if (stands_out(&decider, pb, passes[q].height, &rise)) {
            kept[pb] = 1;
            closed[pb] = rise;
        } else
            owner[pb] = territory(owner, a);
        piece[pb] = pa;
    }
    for (Py_ssize_t e = 0; e < count; e++) lowest[e] = INFINITY;
    for (Py_ssize_t j = 0; j < n; j++) {
        const Py_ssize_t r = find(piece, basin[j]);
        if (values[j] < lowest[r]) lowest[r] = values[j];
    }
    for (Py_ssize_t e = 0; e < count; e++) {
        if (find(piece, e) != e) continue;
        double rise;
        if (stands_out(&decider, e, lowest[e], &rise)) {
            kept[e] = 1;
            closed[e] = rise >= 1e-3 ? rise : NAN;
        }
    }
    /* territories, their masses, the kept ones heaviest first */
    for (Py_ssize_t e = 0; e < count; e++) final[e] = territory(owner, e);
    double *territory_mass = lowest; /* reused */
    for (Py_ssize_t e = 0; e < count; e++) territory_mass[e] = 0.0;
    for (Py_ssize_t e = 0; e < count; e++) territory_mass[final[e]] += basin_mass[e];
    Py_ssize_t clusters_found = 0;
    Py_ssize_t *order = piece; /* reused */
    for (Py_ssize_t e = 0; e < count; e++)
        if (kept[e] && territory_mass[e] >= least_mass) order[clusters_found++] = e;
    mass_order_key = territory_mass;
    peak_order_key = peaks;
    qsort(order, (size_t)clusters_found, sizeof(Py_ssize_t), kept_order);
    for (Py_ssize_t e = 0; e < count; e++) cluster_of[e] = -1;
    for (Py_ssize_t index = 0; index < clusters_found; index++) cluster_of[order[index]] = index;

    npy_intp shape_k[1] = {clusters_found}, shape_m[1] = {m}, shape_centres[2] = {clusters_found, 2};
    PyArrayObject *out_angle = (PyArrayObject *)PyArray_SimpleNew(2, shape_centres, NPY_DOUBLE),
                  *out_conc = (PyArrayObject *)PyArray_SimpleNew(1, shape_k, NPY_DOUBLE),
                  *out_prominence = (PyArrayObject *)PyArray_SimpleNew(1, shape_k, NPY_DOUBLE),
                  *out_mass = (PyArrayObject *)PyArray_SimpleNew(1, shape_k, NPY_DOUBLE),
                  *out_size = (PyArrayObject *)PyArray_SimpleNew(1, shape_k, NPY_INTP),
                  *out_labels = (PyArrayObject *)PyArray_SimpleNew(1, shape_m, NPY_INTP),
                  *out_tops = (PyArrayObject *)PyArray_SimpleNew(1, shape_k, NPY_INTP);
    if (out_angle && out_conc && out_prominence && out_mass && out_size && out_labels && out_tops) {
        double *o_angle = PyArray_DATA(out_angle), *o_conc = PyArray_DATA(out_conc),
               *o_prom = PyArray_DATA(out_prominence), *o_mass = PyArray_DATA(out_mass);
        Py_ssize_t *o_size = PyArray_DATA(out_size), *o_labels = PyArray_DATA(out_labels),
                   *o_tops = PyArray_DATA(out_tops);
        double *best = basin_mass; /* reused: the highest value of each cluster's places */
        for (Py_ssize_t index = 0; index < clusters_found; index++) {
            const Py_ssize_t t = order[index];
            if (refine) peak_concentration(&decider, t);
            double theta;
            if (refined[t]) {
                theta = angle[t];
                o_conc[index] = peak_conc[t];
            } else {
                theta = two_pi * (double)peaks[t] / (double)n;
                double value, first, second;
                series_at(&series, theta, &value, &first, &second);
                o_conc[index] = value > 0 ? -second / (beta * value) : 0.0;
            }
            o_angle[2 * index] = cos(theta);
            o_angle[2 * index + 1] = sin(theta);
            o_prom[index] = closed[t];
            o_mass[index] = 0.0;
            o_size[index] = 0;
            best[index] = -INFINITY;
            o_tops[index] = -1;
        }
        for (Py_ssize_t i = 0; i < m; i++) {
            const Py_ssize_t label = is_flat[place[i]] ? -1 : cluster_of[final[basin[place[i]]]];
            o_labels[i] = label;
            if (label < 0) continue;
            o_mass[label] += masses[i];
            o_size[label] += 1;
            if (values[place[i]] > best[label]) {
                best[label] = values[place[i]];
                o_tops[label] = i;
            }
        }
        result = Py_BuildValue("NNNNNNN", out_angle, out_conc, out_prominence, out_mass, out_size, out_labels,
                               out_tops);
    } else {
        Py_XDECREF(out_angle);
        Py_XDECREF(out_conc);
        Py_XDECREF(out_prominence);
        Py_XDECREF(out_mass);
        Py_XDECREF(out_size);
        Py_XDECREF(out_labels);
        Py_XDECREF(out_tops);
    }
cleanup:
    free(re);
    free(node_mass);
    free(place);
    free(refined);
    free(is_flat);
    free(passes);
done:
    Py_XDECREF(coefficient_array);
    Py_XDECREF(angle_array);
    Py_XDECREF(mass_array);
    Py_XDECREF(value_array);
    return result;
}

/* equispaced(angles, tol): whether |angles[j] - angles[0] - (2 pi / n) j| <= tol for every j (numpy's formula). */
static PyObject *equispaced(PyObject *self, PyObject *args) {
    PyObject *angle_object;
    double tol;
    if (!PyArg_ParseTuple(args, "Od", &angle_object, &tol)) return NULL;
    PyArrayObject *angle_array = contiguous(angle_object, NPY_DOUBLE, "angles");
    if (angle_array == NULL) return NULL;
    const Py_ssize_t n = PyArray_DIM(angle_array, 0);
    const double *angles = PyArray_DATA(angle_array), step = 2.0 * M_PI / (double)n;
    int grid = n >= 1;
    for (Py_ssize_t j = 0; j < n && grid; j++) grid = fabs(angles[j] - angles[0] - step * (double)j) <= tol;
    Py_DECREF(angle_array);
    return PyBool_FromLong(grid);
}

static PyMethodDef methods[] = {
    {"equispaced", equispaced, METH_VARARGS,
     "equispaced(angles, tol) -> whether the angles are theta_0 + 2 pi j / n to within tol."},
    {"clusters", clusters, METH_VARARGS,
     "clusters(coefficients, values, angles, masses, beta, prominence, concentration, least_mass, flat, refine) -> "
     "(centre, concentration, prominence, mass, basin_size, labels, tops); see the file's comment."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_circle_clusters",
                                    "The clusters of a measure on the circle in one compiled call.", -1, methods};

PyMODINIT_FUNC PyInit__circle_clusters(void) {
    import_array();
    return PyModule_Create(&module);
}
