/*
 * elements.c: chemical symbols <-> atomic numbers (1..118).
 */
#include <string.h>

#include "fnq.h"
#include "model/model.h"

static const char *const symbols[] = {
    "",   "H",  "He", "Li", "Be", "B",  "C",  "N",  "O",  "F",  "Ne", "Na", "Mg", "Al", "Si",
    "P",  "S",  "Cl", "Ar", "K",  "Ca", "Sc", "Ti", "V",  "Cr", "Mn", "Fe", "Co", "Ni", "Cu",
    "Zn", "Ga", "Ge", "As", "Se", "Br", "Kr", "Rb", "Sr", "Y",  "Zr", "Nb", "Mo", "Tc", "Ru",
    "Rh", "Pd", "Ag", "Cd", "In", "Sn", "Sb", "Te", "I",  "Xe", "Cs", "Ba", "La", "Ce", "Pr",
    "Nd", "Pm", "Sm", "Eu", "Gd", "Tb", "Dy", "Ho", "Er", "Tm", "Yb", "Lu", "Hf", "Ta", "W",
    "Re", "Os", "Ir", "Pt", "Au", "Hg", "Tl", "Pb", "Bi", "Po", "At", "Rn", "Fr", "Ra", "Ac",
    "Th", "Pa", "U",  "Np", "Pu", "Am", "Cm", "Bk", "Cf", "Es", "Fm", "Md", "No", "Lr", "Rf",
    "Db", "Sg", "Bh", "Hs", "Mt", "Ds", "Rg", "Cn", "Nh", "Fl", "Mc", "Lv", "Ts", "Og"};

#define N_ELEMENTS ((int32_t)(sizeof(symbols) / sizeof(symbols[0])))

const char *fnq_element_symbol(int32_t z) { return fnq__element_symbol(z); }
int32_t fnq_element_z(const char *symbol) { return fnq__element_z(symbol); }

int32_t fnq__element_z(const char *symbol)
{
    if (!symbol || !symbol[0])
        return 0;
    for (int32_t z = 1; z < N_ELEMENTS; z++)
        if (strcmp(symbols[z], symbol) == 0)
            return z;
    return 0;
}

const char *fnq__element_symbol(int32_t z)
{
    return (z >= 1 && z < N_ELEMENTS) ? symbols[z] : NULL;
}
