"""Python objects (pymalloc) made by a C extension, by Python code that C
calls back, and by plain Python code, all kept to the end
(test_python_objstack.py, --python-allocators): json's C scanner makes the
strings of json.loads, map() calls cb() from C. Prints the scanner's
strings' total size as the interpreter counts it (sys.getsizeof)."""
import json
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
keep = []


def cb(i):
    return [i, i + 1]  # @cb_list


def main():
    strs = 0
    for i in range(N):
        doc = json.loads('["k%d", "v%d"]' % (i, i))  # @main_loads
        strs += sum(sys.getsizeof(s) for s in doc)
        keep.append(doc)
    keep.extend(map(cb, range(N)))  # @main_map
    keep.append(bytearray(100000))  # @main_buffer
    return strs


strs = main()  # @module_main
print("str_bytes=%d" % strs)
print("ran=1")
