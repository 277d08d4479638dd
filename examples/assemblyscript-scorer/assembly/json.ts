// A small JSON reader over bytes in linear memory, and a writer of the
// JSON the Rust scorers answer. The scorer needs a handful of fields out of
// its input and skips the rest; nothing here builds a document tree, so a
// call costs little fuel and memory.
//
// Numbers are written the way the Rust side writes them (serde_json):
// shortest round-trip digits, `5.0` for a whole number, plain notation for
// exponents from -5 to 16, otherwise `1e+21` / `1.5e-7` (a positive
// exponent carries its sign), and `null` for a value that is not finite. The digits
// come from AssemblyScript's own `f64.toString()`; only the layout is ours.

/// Why the input could not be read: set by the reader, shown in the error
/// reply. Empty while all is well.
export let failure: string = "";

function fail(why: string, at: usize, start: usize): void {
  if (failure.length == 0) failure = why + " at byte " + (at - start).toString();
}

/// A cursor over `len` bytes at `ptr`.
export class Reader {
  pos: usize;
  end: usize;
  start: usize;
  depth: i32 = 0;

  constructor(ptr: usize, len: usize) {
    this.pos = ptr;
    this.start = ptr;
    this.end = ptr + len;
  }

  ok(): bool {
    return failure.length == 0;
  }

  error(why: string): void {
    fail(why, this.pos, this.start);
    // Stop reading: every loop below ends at the end.
    this.pos = this.end;
  }

  peek(): i32 {
    return this.pos < this.end ? <i32>load<u8>(this.pos) : -1;
  }

  skipSpace(): void {
    while (this.pos < this.end) {
      const c = load<u8>(this.pos);
      if (c != 0x20 && c != 0x0a && c != 0x0d && c != 0x09) break;
      this.pos++;
    }
  }

  /// Consumes `c` after optional white space; false (and an error) when
  /// something else comes.
  expect(c: i32): bool {
    this.skipSpace();
    if (this.peek() != c) {
      this.error("expected " + String.fromCharCode(c));
      return false;
    }
    this.pos++;
    return true;
  }

  /// Consumes `word` (true, false, null).
  literal(word: string): bool {
    for (let i = 0; i < word.length; i++) {
      if (this.peek() != word.charCodeAt(i)) {
        this.error("expected " + word);
        return false;
      }
      this.pos++;
    }
    return true;
  }

  /// Reads a string (the opening quote is next) into `out` as UTF-8,
  /// escapes decoded.
  string(out: Bytes): bool {
    out.clear();
    if (!this.expect(0x22)) return false;
    while (this.pos < this.end) {
      const c = <i32>load<u8>(this.pos++);
      if (c == 0x22) return true;
      if (c < 0x20) {
        this.error("control character in a string");
        return false;
      }
      if (c != 0x5c) {
        out.push(<u8>c);
        continue;
      }
      const e = this.peek();
      this.pos++;
      if (e == 0x22 || e == 0x5c || e == 0x2f) out.push(<u8>e);
      else if (e == 0x62) out.push(0x08);
      else if (e == 0x66) out.push(0x0c);
      else if (e == 0x6e) out.push(0x0a);
      else if (e == 0x72) out.push(0x0d);
      else if (e == 0x74) out.push(0x09);
      else if (e == 0x75) {
        let cp = this.hex4();
        if (cp < 0) return false;
        if (cp >= 0xd800 && cp < 0xdc00) {
          // A high surrogate must be followed by a low one.
          if (this.peek() != 0x5c) return this.badEscape();
          this.pos++;
          if (this.peek() != 0x75) return this.badEscape();
          this.pos++;
          const low = this.hex4();
          if (low < 0xdc00 || low >= 0xe000) return this.badEscape();
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          return this.badEscape();
        }
        out.codePoint(cp);
      } else {
        return this.badEscape();
      }
    }
    this.error("unterminated string");
    return false;
  }

  badEscape(): bool {
    this.error("invalid escape");
    return false;
  }

  hex4(): i32 {
    let v = 0;
    for (let i = 0; i < 4; i++) {
      const c = this.peek();
      this.pos++;
      let d = -1;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
      if (d < 0) {
        this.error("invalid unicode escape");
        return -1;
      }
      v = (v << 4) | d;
    }
    return v;
  }

  /// Reads a number. Short decimals (at most 19 significant digits,
  /// a power of ten up to 22) are converted exactly as a correctly rounded
  /// parser would (one rounding: Clinger's fast path); anything else goes
  /// through AssemblyScript's `parseFloat`.
  number(): f64 {
    this.skipSpace();
    const from = this.pos;
    let negative = false;
    if (this.peek() == 0x2d) {
      negative = true;
      this.pos++;
    }
    let mantissa: u64 = 0;
    let digits = 0;
    let exponent = 0;
    let any = false;
    // Integer part: one 0, or digits not starting with 0.
    if (this.peek() == 0x30) {
      this.pos++;
      any = true;
    } else {
      while (this.peek() >= 0x30 && this.peek() <= 0x39) {
        const d = <u64>(this.peek() - 0x30);
        if (digits < 19) {
          mantissa = mantissa * 10 + d;
          if (mantissa != 0) digits++;
        } else {
          exponent++;
          digits++;
        }
        this.pos++;
        any = true;
      }
    }
    if (!any) {
      this.error("expected a value");
      return 0;
    }
    if (this.peek() == 0x2e) {
      this.pos++;
      let fraction = false;
      while (this.peek() >= 0x30 && this.peek() <= 0x39) {
        const d = <u64>(this.peek() - 0x30);
        if (digits < 19) {
          mantissa = mantissa * 10 + d;
          exponent--;
          if (mantissa != 0) digits++;
        } else {
          digits++;
        }
        this.pos++;
        fraction = true;
      }
      if (!fraction) {
        this.error("expected a digit after '.'");
        return 0;
      }
    }
    if (this.peek() == 0x65 || this.peek() == 0x45) {
      this.pos++;
      let sign = 1;
      if (this.peek() == 0x2b || this.peek() == 0x2d) {
        if (this.peek() == 0x2d) sign = -1;
        this.pos++;
      }
      let e = 0;
      let expDigits = false;
      while (this.peek() >= 0x30 && this.peek() <= 0x39) {
        if (e < 100000) e = e * 10 + (this.peek() - 0x30);
        this.pos++;
        expDigits = true;
      }
      if (!expDigits) {
        this.error("expected a digit in the exponent");
        return 0;
      }
      exponent += sign * e;
    }
    let value: f64;
    if (digits <= 19 && mantissa <= (<u64>1 << 53) && exponent >= -22 && exponent <= 22) {
      value = <f64>mantissa;
      if (exponent < 0) value /= POW10[-exponent];
      else value *= POW10[exponent];
    } else {
      value = parseFloat(String.UTF8.decodeUnsafe(from, this.pos - from));
      return value;
    }
    return negative ? -value : value;
  }

  /// Skips one value of any kind.
  skip(): void {
    this.skipSpace();
    const c = this.peek();
    if (c == 0x7b || c == 0x5b) {
      const close = c == 0x7b ? 0x7d : 0x5d;
      if (!this.enter()) return;
      this.pos++;
      this.skipSpace();
      if (this.peek() == close) {
        this.pos++;
        this.depth--;
        return;
      }
      const scratch = new Bytes();
      while (this.ok()) {
        if (c == 0x7b) {
          this.string(scratch);
          if (!this.expect(0x3a)) return;
        }
        this.skip();
        this.skipSpace();
        if (this.peek() == 0x2c) {
          this.pos++;
          continue;
        }
        if (this.expect(close)) this.depth--;
        return;
      }
    } else if (c == 0x22) {
      this.string(new Bytes());
    } else if (c == 0x74) {
      this.literal("true");
    } else if (c == 0x66) {
      this.literal("false");
    } else if (c == 0x6e) {
      this.literal("null");
    } else {
      this.number();
    }
  }

  /// serde_json refuses input nested deeper than 128; so does this.
  enter(): bool {
    this.depth++;
    if (this.depth > 128) {
      this.error("recursion limit exceeded");
      return false;
    }
    return true;
  }

  /// Reads an object member by member: `member` is called with each key
  /// (in `key`) and must consume its value. False when it was not an
  /// object (the value is then left unread, with an error set).
  object(key: Bytes, member: (r: Reader, key: Bytes) => void): bool {
    if (!this.expect(0x7b)) return false;
    if (!this.enter()) return false;
    this.skipSpace();
    if (this.peek() == 0x7d) {
      this.pos++;
      this.depth--;
      return true;
    }
    while (this.ok()) {
      if (!this.string(key)) return false;
      if (!this.expect(0x3a)) return false;
      member(this, key);
      this.skipSpace();
      if (this.peek() == 0x2c) {
        this.pos++;
        this.skipSpace();
        continue;
      }
      if (!this.expect(0x7d)) return false;
      this.depth--;
      return true;
    }
    return false;
  }

  /// Nothing but white space may follow the document.
  finish(): void {
    this.skipSpace();
    if (this.ok() && this.pos != this.end) this.error("trailing characters");
  }
}

/// Exact powers of ten up to 10^22 (the largest one a double holds exactly).
const POW10: StaticArray<f64> = [
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
  1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A growing byte buffer: keys while reading, the reply while writing.
export class Bytes {
  ptr: usize = 0;
  len: usize = 0;
  cap: usize = 0;

  clear(): void {
    this.len = 0;
  }

  reserve(more: usize): void {
    if (this.len + more <= this.cap) return;
    let cap: usize = this.cap < 64 ? 64 : this.cap * 2;
    while (cap < this.len + more) cap *= 2;
    this.ptr = this.ptr == 0 ? heap.alloc(cap) : heap.realloc(this.ptr, cap);
    this.cap = cap;
  }

  push(b: u8): void {
    this.reserve(1);
    store<u8>(this.ptr + this.len, b);
    this.len++;
  }

  codePoint(cp: i32): void {
    if (cp < 0x80) {
      this.push(<u8>cp);
    } else if (cp < 0x800) {
      this.push(<u8>(0xc0 | (cp >> 6)));
      this.push(<u8>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      this.push(<u8>(0xe0 | (cp >> 12)));
      this.push(<u8>(0x80 | ((cp >> 6) & 0x3f)));
      this.push(<u8>(0x80 | (cp & 0x3f)));
    } else {
      this.push(<u8>(0xf0 | (cp >> 18)));
      this.push(<u8>(0x80 | ((cp >> 12) & 0x3f)));
      this.push(<u8>(0x80 | ((cp >> 6) & 0x3f)));
      this.push(<u8>(0x80 | (cp & 0x3f)));
    }
  }

  /// Whether the bytes are exactly the ASCII text `s`.
  is(s: string): bool {
    if (<usize>s.length != this.len) return false;
    for (let i = 0; i < s.length; i++) {
      if (<i32>load<u8>(this.ptr + i) != s.charCodeAt(i)) return false;
    }
    return true;
  }

  /// Appends text as UTF-8 (every text the scorer writes is ASCII).
  text(s: string): void {
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x80) this.push(<u8>c);
      else this.codePoint(c);
    }
  }

  /// Appends `s` as a JSON string. Every string the scorer writes is one
  /// of its own constants, plain ASCII without quotes or backslashes.
  quoted(s: string): void {
    this.push(0x22);
    this.text(s);
    this.push(0x22);
  }

  /// Appends `v` as serde_json writes an f64 (see the top of this file).
  number(v: f64): void {
    if (!isFinite(v)) {
      this.text("null");
      return;
    }
    if (v == 0) {
      this.text(1 / v < 0 ? "-0.0" : "0.0");
      return;
    }
    // Shortest digits from AssemblyScript, as d.ddd, d.dddeN or 0.000ddd.
    const s = v.toString();
    let digits = "";
    let point = -1; // digits before the decimal point
    let exp = 0;
    let i = 0;
    if (s.charCodeAt(0) == 0x2d) {
      this.push(0x2d);
      i = 1;
    }
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c == 0x2e) {
        point = digits.length;
      } else if (c == 0x65) {
        exp = <i32>parseInt(s.substring(i + 1), 10);
        break;
      } else {
        digits += String.fromCharCode(c);
      }
    }
    if (point < 0) point = digits.length;
    // Leading zeros (0.00123) and trailing zeros (5.0) carry no digits.
    let lead = 0;
    while (lead < digits.length - 1 && digits.charCodeAt(lead) == 0x30) lead++;
    let end = digits.length;
    while (end > lead + 1 && digits.charCodeAt(end - 1) == 0x30) end--;
    const d = digits.substring(lead, end);
    // The value is 0.d × 10^kk.
    const kk = point - lead + exp;
    const n = d.length;
    if (kk >= n && kk <= 16) {
      // 1234e7 -> 12340000000.0
      this.text(d);
      for (let z = n; z < kk; z++) this.push(0x30);
      this.text(".0");
    } else if (kk > 0 && kk <= 16) {
      // 1234e-2 -> 12.34
      this.text(d.substring(0, kk));
      this.push(0x2e);
      this.text(d.substring(kk));
    } else if (kk > -5 && kk <= 0) {
      // 1234e-6 -> 0.001234
      this.text("0.");
      for (let z = kk; z < 0; z++) this.push(0x30);
      this.text(d);
    } else {
      // 1e+30, 1.234e+33, 1.5e-7
      this.text(d.substring(0, 1));
      if (n > 1) {
        this.push(0x2e);
        this.text(d.substring(1));
      }
      this.push(0x65);
      if (kk - 1 > 0) this.push(0x2b);
      this.text((kk - 1).toString());
    }
  }

  /// The bytes, packed for the host as `(ptr << 32) | len`.
  packed(): i64 {
    return <i64>(((<u64>this.ptr) << 32) | <u64>this.len);
  }
}
