"""Java's number text as Spark prints it, and float32 rounding.

Spark renders doubles and floats with the JVM's ``Double.toString``/``Float.toString``
(``CAST(x AS STRING)``, ``to_json``). Up to JDK 18 these use ``FloatingDecimal``'s digit
generator, which is *not* the shortest round-trip form: integral values below 2**63 print
every digit of the exact integer (``1.99802253835840973E18``), E-notation always gets at
least two digits (``4.9E-324``, not ``5e-324``), and the stopping test is symmetric around
the value (``9.999999999999999E22`` for 1e23). What follows re-derives that algorithm
(Steele & White free-format digit generation with FloatingDecimal's fixed-width integer
paths and their 32/64-bit wrap-around) so the text is identical to Spark's on Java 17.

Decimals print as ``BigDecimal.toPlainString`` (``CAST(d AS STRING)`` keeps the scale:
``1.50``) or, in JSON, after ``stripTrailingZeros`` (``1.5``); never with an exponent.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from fractions import Fraction

# --- Double.toString / Float.toString ----------------------------------------------------------------

# ceil(log2(5**i)) for i < 27, as FloatingDecimal tabulates it (it picks the arithmetic width).
_N_5_BITS = (0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49, 52, 54, 56, 59, 61)
# Decimal digits of 2**p that lie below a double's precision (insignificant) for 2 <= p < 64.
_INSIGNIFICANT_POW2 = (
    0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 8, 8, 8, 9, 9,
    9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15, 15, 16, 16, 16,
    17, 17, 17, 18, 18, 18, 19,
)
_F64_BITS = struct.Struct("<d")
_U64_BITS = struct.Struct("<Q")
_F32_BITS = struct.Struct("<f")
_U32_BITS = struct.Struct("<I")


def _wrap32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


def _wrap64(x: int) -> int:
    x &= 0xFFFFFFFFFFFFFFFF
    return x - 0x10000000000000000 if x & 0x8000000000000000 else x


def _estimate_dec_exp(fract_bits: int, bin_exp: int) -> int:
    """floor(log10(value)) estimated in double arithmetic, exactly as FloatingDecimal does."""
    d2 = _F64_BITS.unpack(_U64_BITS.pack((1023 << 52) | (fract_bits & 0xFFFFFFFFFFFFF)))[0]
    return math.floor((d2 - 1.5) * 0.289529654 + 0.176091259 + bin_exp * 0.301029995663981)


def _long_digits(lvalue: int, insignificant: int) -> tuple[list[int], int]:
    """Digits of an exact integer, dropping ``insignificant`` low digits with round-half-up."""
    if insignificant:
        pow10 = 10**insignificant
        lvalue, residue = divmod(lvalue, pow10)
        if residue >= pow10 >> 1:
            lvalue += 1
    text = str(lvalue)
    return [ord(c) - 48 for c in text.rstrip("0")], len(text) + insignificant


def _fd_digits(bin_exp: int, fract_bits: int, n_significant_bits: int) -> tuple[list[int], int]:
    """``(digits, decimal_exponent)`` with value = 0.d1d2... * 10**decimal_exponent.

    ``fract_bits`` holds the significand with its high bit at bit 52; ``bin_exp`` is unbiased.
    """
    tail_zeros = (fract_bits & -fract_bits).bit_length() - 1
    n_fract_bits = 53 - tail_zeros
    n_tiny_bits = max(0, n_fract_bits - bin_exp - 1)
    if n_tiny_bits == 0 and -21 <= bin_exp <= 62:
        # An integer below 2**63: printed exactly, down to the precision of the type.
        insignificant = 0
        if bin_exp > n_significant_bits:
            p2 = bin_exp - n_significant_bits - 1
            insignificant = _INSIGNIFICANT_POW2[p2] if 1 < p2 < 64 else 0
        lvalue = fract_bits << (bin_exp - 52) if bin_exp >= 52 else fract_bits >> (52 - bin_exp)
        return _long_digits(lvalue, insignificant)

    dec_exp = _estimate_dec_exp(fract_bits, bin_exp)
    b5 = max(0, -dec_exp)
    b2 = b5 + n_tiny_bits + bin_exp
    s5 = max(0, dec_exp)
    s2 = s5 + n_tiny_bits
    m5 = b5
    m2 = b2 - n_significant_bits
    fract_bits >>= tail_zeros
    b2 -= n_fract_bits - 1
    common = min(b2, s2)
    b2 -= common
    s2 -= common
    m2 -= common
    if n_fract_bits == 1:  # exact power of two: the gap below is half as wide
        m2 -= 1
    if m2 < 0:
        b2 -= m2
        s2 -= m2
        m2 = 0
    b_bits = n_fract_bits + b2 + (_N_5_BITS[b5] if b5 < 27 else b5 * 3)
    ten_s_bits = s2 + 1 + (_N_5_BITS[s5 + 1] if s5 + 1 < 27 else (s5 + 1) * 3)
    b = (fract_bits * 5**b5) << b2
    s = 5**s5 << s2
    m = 5**m5 << m2
    tens = s * 10
    digits: list[int] = []
    e_form = dec_exp < -3 or dec_exp >= 8
    if b_bits < 64 and ten_s_bits < 64:
        # Fixed-width paths: Java int (32-bit) or long (64-bit) arithmetic, overflow included.
        wrap = _wrap32 if b_bits < 32 and ten_s_bits < 32 else _wrap64
        q, b = divmod(b, s)
        b = wrap(b * 10)
        m = wrap(m * 10)
        low = b < m
        high = wrap(b + m) > tens
        if q == 0 and not high:
            dec_exp -= 1
            e_form = dec_exp < -3 or dec_exp >= 8
        else:
            digits.append(q)
        if e_form:  # E-form always shows a digit after the point
            low = high = False
        while not low and not high:
            q, b = divmod(b, s)
            b = wrap(b * 10)
            m = wrap(m * 10)
            if m > 0:
                low = b < m
                high = wrap(b + m) > tens
            else:  # m overflowed: it is certainly larger than b
                low = high = True
            digits.append(q)
        low_digit_diff = wrap(wrap(b << 1) - tens)
    else:
        # FDBigInteger path: exact arithmetic, and "high" is tested with >=.
        q, b = divmod(b, s)
        b *= 10
        m *= 10
        low = b < m
        high = b + m >= tens
        if q == 0 and not high:
            dec_exp -= 1
            e_form = dec_exp < -3 or dec_exp >= 8
        else:
            digits.append(q)
        if e_form:
            low = high = False
        while not low and not high:
            q, b = divmod(b, s)
            b *= 10
            m *= 10
            low = b < m
            high = b + m >= tens
            digits.append(q)
        low_digit_diff = (b << 1) - tens if high and low else 0
    dec_exponent = dec_exp + 1
    if high and (not low or low_digit_diff > 0 or (low_digit_diff == 0 and digits[-1] & 1)):
        dec_exponent = _round_up(digits, dec_exponent)
    return digits, dec_exponent


def _round_up(digits: list[int], dec_exponent: int) -> int:
    """Add one to the last digit, carrying; an all-nines run becomes 1 followed by zeros."""
    i = len(digits) - 1
    while digits[i] == 9 and i > 0:
        digits[i] = 0
        i -= 1
    if digits[i] == 9:
        digits[0] = 1
        return dec_exponent + 1
    digits[i] += 1
    return dec_exponent


def _java_layout(negative: bool, digits: list[int], dec_exponent: int) -> str:
    """FloatingDecimal's getChars: plain for 1e-3 <= |v| < 1e7, else ``d.dddE[-]x``."""
    text = "".join(map(str, digits))
    n = len(text)
    sign = "-" if negative else ""
    if 0 < dec_exponent < 8:
        if n <= dec_exponent:
            return f"{sign}{text}{'0' * (dec_exponent - n)}.0"
        return f"{sign}{text[:dec_exponent]}.{text[dec_exponent:]}"
    if -3 < dec_exponent <= 0:
        return f"{sign}0.{'0' * -dec_exponent}{text}"
    return f"{sign}{text[0]}.{text[1:] or '0'}E{dec_exponent - 1}"


def _java_float_text(bits: int, fract_bits: int, exp_bits: int) -> str:
    """FloatingDecimal's ``toJavaFormatString`` of an IEEE bit pattern with ``fract_bits``
    fraction and ``exp_bits`` exponent bits: one algorithm for double and float."""
    negative = bool(bits >> (fract_bits + exp_bits))
    fract = bits & ((1 << fract_bits) - 1)
    exp_max = (1 << exp_bits) - 1
    bin_exp = (bits >> fract_bits) & exp_max
    if bin_exp == exp_max:
        return "NaN" if fract else ("-Infinity" if negative else "Infinity")
    if bin_exp == 0:
        if fract == 0:
            return "-0.0" if negative else "0.0"
        shift = fract_bits + 1 - fract.bit_length()
        n_significant = fract.bit_length()
        fract <<= shift
        bin_exp = 1 - shift
    else:
        fract |= 1 << fract_bits
        n_significant = fract_bits + 1
    # The digit generator works on a 52-bit fraction; a float's is widened to it.
    digits, dec_exponent = _fd_digits(bin_exp - (exp_max >> 1), fract << (52 - fract_bits), n_significant)
    return _java_layout(negative, digits, dec_exponent)


def java_double(value: float) -> str:
    """Java 17's ``Double.toString`` (non-finite values come back unquoted: ``NaN``, ``Infinity``)."""
    return _java_float_text(_U64_BITS.unpack(_F64_BITS.pack(value))[0], 52, 11)


def java_float(value: float) -> str:
    """Java 17's ``Float.toString`` of ``value`` rounded to float32."""
    return _java_float_text(_U32_BITS.unpack(_F32_BITS.pack(value))[0], 23, 8)


def java_number_text(value: float, float32: bool = False) -> str:
    """``CAST(x AS STRING)`` of a DOUBLE (or of a FLOAT when ``float32``)."""
    return java_float(value) if float32 else java_double(value)


# --- decimals ------------------------------------------------------------------------------------------


def plain_decimal(unscaled: int, scale: int) -> str:
    """``BigDecimal.toPlainString`` of ``unscaled * 10**-scale`` (scale >= 0)."""
    text = str(abs(unscaled))
    if scale > 0:
        text = text.rjust(scale + 1, "0")
        text = text[:-scale] + "." + text[-scale:]
    return "-" + text if unscaled < 0 else text



def decimal_plain_text(value: Decimal) -> str:
    """``BigDecimal.toPlainString`` of a Python Decimal (its exponent is the scale):
    ``CAST(d AS STRING)`` of a DECIMAL."""
    return plain_decimal(*decimal_parts(value))


def decimal_text(unscaled: int, scale: int) -> str:
    """``BigDecimal.stripTrailingZeros().toPlainString()`` of ``unscaled * 10**-scale``."""
    if scale == 0:
        return str(unscaled)
    negative = unscaled < 0
    digits = str(-unscaled if negative else unscaled)
    if len(digits) <= scale:
        digits = "0" * (scale - len(digits) + 1) + digits
    whole = digits[:-scale]
    fraction = digits[-scale:].rstrip("0")
    text = f"{whole}.{fraction}" if fraction else whole
    return "-" + text if negative and text != "0" else text



def stripped_decimal_text(value: Decimal) -> str:
    """``BigDecimal.stripTrailingZeros().toPlainString()`` of a Python Decimal."""
    return decimal_text(*decimal_parts(value))


# --- float32 --------------------------------------------------------------------------------------------

_F32 = struct.Struct("<f")


def to_float32(x: float) -> float:
    """Round a double to the nearest float32 (Java's ``(float) d``; overflow gives infinity)."""
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def float32_of_fraction(value: Fraction) -> float:
    """The float32 nearest to an exact rational (round half to even), as ``Float.parseFloat`` does."""
    if value == 0:
        return 0.0
    sign = -1.0 if value < 0 else 1.0
    a = abs(value)
    exp = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** exp > a:
        exp -= 1
    if exp > 128:
        return sign * math.inf
    scale = 23 - exp if exp >= -126 else 149
    scaled = a * (Fraction(2) ** scale)
    m = scaled.numerator // scaled.denominator
    rem = scaled - m
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and m & 1):
        m += 1
    result = math.ldexp(m, -scale)
    if result >= 2.0**128:
        return sign * math.inf
    return sign * result


# --- fractional -> integral (ANSI) ---------------------------------------------------------------

# Value ranges of Spark's integral types.
INTEGRAL_RANGES = {
    "tinyint": (-(1 << 7), (1 << 7) - 1),
    "smallint": (-(1 << 15), (1 << 15) - 1),
    "int": (-(1 << 31), (1 << 31) - 1),
    "bigint": (-(1 << 63), (1 << 63) - 1),
}


def fractional_to_integral(x: float, lo: int, hi: int) -> int | None:
    """ANSI DOUBLE/FLOAT -> integral: truncate towards zero; NaN, infinities and values whose
    floor/ceil leave ``[lo, hi]`` fail (None). The test is made in double arithmetic, as
    Spark's is, so 2**63 still becomes Long.MaxValue."""
    if x != x or x in (math.inf, -math.inf):
        return None
    if math.floor(x) <= float(hi) and math.ceil(x) >= float(lo):
        return min(max(int(x), lo), hi)
    return None


def decimal_to_integral(unscaled: int, scale: int, lo: int, hi: int) -> int | None:
    """ANSI DECIMAL -> integral: BIGINT truncates exactly; INT/SMALLINT/TINYINT go through a
    double, as Spark's ``Decimal.roundToInt/Short/Byte`` do. None when out of range."""
    if (lo, hi) != (-(1 << 63), (1 << 63) - 1):
        return fractional_to_integral(unscaled / 10**scale, lo, hi)
    n = abs(unscaled) // 10**scale
    n = -n if unscaled < 0 else n
    return n if lo <= n <= hi else None


def decimal_parts(value: Decimal) -> tuple[int, int]:
    """``(unscaled, scale)`` of a finite Python Decimal, scale >= 0."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"{value} is not a finite decimal")
    unscaled = int("".join(map(str, digits)) or "0")
    if exponent > 0:
        unscaled, exponent = unscaled * 10**exponent, 0
    return (-unscaled if sign else unscaled), -exponent
