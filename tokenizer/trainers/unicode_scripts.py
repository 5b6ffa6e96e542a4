"""Unicode script of every code point (the Script property of the Unicode Character Database), as a compressed
table of ranges, for SentencePiece's piece rules (no piece mixes scripts when split_by_unicode_script).

``script_table()`` returns an int16 array of 0x110000 entries: an index into ``SCRIPT_NAMES`` (0 = Unknown; code
points not in Scripts.txt, which SentencePiece treats as Common). Example: ``SCRIPT_NAMES[script_table()[ord("a")]]``
is ``"LATIN"``.

The blob is zlib-compressed little-endian uint32 pairs ``(first code point of a run, script index)``; it was built
from the ``Script`` property of the ``regex`` package's Unicode tables (a build-time tool only, not a dependency).
"""

from __future__ import annotations

import base64
import functools
import zlib

import numpy as np

SCRIPT_NAMES = ['UNKNOWN', 'COMMON', 'LATIN', 'BOPOMOFO', 'INHERITED', 'GREEK', 'COPTIC', 'CYRILLIC', 'ARMENIAN', 'HEBREW', 'ARABIC', 'SYRIAC', 'THAANA', 'NKOO', 'SAMARITAN', 'MANDAIC', 'DEVANAGARI', 'BENGALI', 'GURMUKHI', 'GUJARATI', 'ORIYA', 'TAMIL', 'TELUGU', 'KANNADA', 'MALAYALAM', 'SINHALA', 'THAI', 'LAOO', 'TIBETAN', 'MYANMAR', 'GEORGIAN', 'HANGUL', 'ETHIOPIC', 'CHEROKEE', 'CANADIANABORIGINAL', 'OGHAM', 'RUNIC', 'TAGALOG', 'HANUNOO', 'BUHID', 'TAGBANWA', 'KHMER', 'MONGOLIAN', 'LIMBU', 'TAILE', 'NEWTAILUE', 'BUGINESE', 'TAITHAM', 'BALINESE', 'SUNDANESE', 'BATAK', 'LEPCHA', 'OLCHIKI', 'BRAILLE', 'GLAGOLITIC', 'TIFINAGH', 'HANI', 'HIRAGANA', 'KATAKANA', 'YIII', 'LISU', 'VAII', 'BAMUM', 'SYLOTINAGRI', 'PHAGSPA', 'SAURASHTRA', 'KAYAHLI', 'REJANG', 'JAVANESE', 'CHAM', 'TAIVIET', 'MEETEIMAYEK', 'LINEARB', 'LYCIAN', 'CARIAN', 'OLDITALIC', 'GOTHIC', 'OLDPERMIC', 'UGARITIC', 'OLDPERSIAN', 'DESERET', 'SHAVIAN', 'OSMANYA', 'OSAGE', 'ELBASAN', 'CAUCASIANALBANIAN', 'VITHKUQI', 'TODHRI', 'LINEARA', 'CYPRIOT', 'IMPERIALARAMAIC', 'PALMYRENE', 'NABATAEAN', 'HATRAN', 'PHOENICIAN', 'LYDIAN', 'SIDETIC', 'MEROITICHIEROGLYPHS', 'MEROITICCURSIVE', 'KHAROSHTHI', 'OLDSOUTHARABIAN', 'OLDNORTHARABIAN', 'MANICHAEAN', 'AVESTAN', 'INSCRIPTIONALPARTHIAN', 'INSCRIPTIONALPAHLAVI', 'PSALTERPAHLAVI', 'OLDTURKIC', 'OLDHUNGARIAN', 'HANIFIROHINGYA', 'GARAY', 'YEZIDI', 'OLDSOGDIAN', 'SOGDIAN', 'OLDUYGHUR', 'CHORASMIAN', 'ELYMAIC', 'BRAHMI', 'KAITHI', 'SORASOMPENG', 'CHAKMA', 'MAHAJANI', 'SHARADA', 'KHOJKI', 'MULTANI', 'KHUDAWADI', 'GRANTHA', 'TULUTIGALARI', 'NEWA', 'TIRHUTA', 'SIDDHAM', 'MODI', 'TAKRI', 'AHOM', 'DOGRA', 'WARANGCITI', 'DIVESAKURU', 'NANDINAGARI', 'ZANABAZARSQUARE', 'SOYOMBO', 'PAUCINHAU', 'SUNUWAR', 'BHAIKSUKI', 'MARCHEN', 'MASARAMGONDI', 'GUNJALAGONDI', 'TOLONGSIKI', 'MAKASAR', 'KAWI', 'CUNEIFORM', 'PROTOCUNEIFORM', 'CYPROMINOAN', 'EGYPTIANHIEROGLYPHS', 'ANATOLIANHIEROGLYPHS', 'GURUNGKHEMA', 'MROO', 'TANGSA', 'BASSAVAH', 'PAHAWHHMONG', 'KIRATRAI', 'MEDEFAIDRIN', 'BERIAERFE', 'MIAO', 'TANGUT', 'NUSHU', 'KHITANSMALLSCRIPT', 'JURCHEN', 'DUPLOYAN', 'SIGNWRITING', 'NYIAKENGPUACHUEHMONG', 'TOTO', 'WANCHO', 'NAGMUNDARI', 'OLONAL', 'TAIYO', 'MENDEKIKAKUI', 'ADLAM', 'SEAL', 'KATAKANAORHIRAGANA']

_RANGES = (
    "eNo12wl4Tdf6x/G1TTEHMQRB1DzHUFNSomqu9KCIIE5bDaWIlpbeq04HYwxB/3VRGkVluJdEJ3+iPXVrJg5FFOVQ1clwzCTIXe95v73P4/n1s9"
    "be++xh7bXXXjvXGGMc+6+H/VfM/huJX8L/wJk4C+/AO7EX5+PT+D5+gP+/mNpfTP0r/tNmcZtXsaCEjWSbJW1OK67l0/EMWdj+7x38LvWzsYf6"
    "D/Ec6ufieXg+TmH5RXgxXoI/wxvwJZulbAaw7GyI/E4J3e95OKqkrtfWZmmbw3E8TsXLbJaxeRD78F/4Br6L5cfL2ihZSo+jFC6PK+DaOALXw5"
    "E4FvfAA0rp/g/DyXgq/pnlz2M5yHI2KoboboXiAXggdoXo8h6b5W1uo95rs4LNQvwYy8mpaKN1aS2Pwt1xrM1Qm6NwIh6D3aX1dyfi5NL6+8vx"
    "SnyptB7PL1hOciUbg8rocQ/FY8vocknYY7OytK8yur05eDFeipfhFTgDZ+IcvA1/gb/GO3Au3oP34QP4ED6K8/FpfA6fxxfwZXwFF2HHnowq0q"
    "zLqkvicjgUV8ZhuBlujtvidrgDfhp3wp1xVxyDn8HdcE/cB/fDA3AcHoQH4xF4NE7EY3ASfhu/ZzNMri+eg5fgpXg5XoEzcCbOwdvwl/grvAPn"
    "4r14Hz6ID+E87MPHsB9fxlfwLfwQB28Kub42q8r1xSVxBRyKK+Mw3Aw3x21xO9wBP4274hjcC/fB/fAAHIeH4Hg8CifiMXgsTsIz8Ps2q8n1w3"
    "NwCl6Cl+Hl+GO8Cq/Bn+C1eB1OwxvwJpyOs/AWvAN/i/+L9+ID+CDOwz58DOfj0/gKLsTSyVaX61leWRFXxlVwM9wcd8UxuBfujfvh/jgOD8XD"
    "cTweiUfhROzGY3ESTsZvY4/NGtKvUr4EL8PLcQbOxF/ir/AOnIv34L34AD6I8/BJnI/P4QvYjy/jKziAb+I7WB5u4RIVuC64Mq6Ce+HeuB/uj1"
    "34RTwWJ2EPfs9mTbkP8By8Eq/G2/AXOBfvwt9iL96HD+JD+Cg+iU/hfHwa+/EVHMC38F3s2Id+LZvRFdXdK+pzOJbyUZS/Z7O2zQ/wh3gOnotT"
    "8CK8EW/Cn+PN+FvsxXvwXrwP78dHsQ+fweewH8tgJcJG31BlPzwJT8X/wqvwLvwtPoLz8MlQPT8/4bPUy6CljvRXNuvK/lfiOYP34yM4D/twYS"
    "Xd7iMsg4V6wQZrx5Ky/1VonzgOu/BwHI9H4ASciN14AV6Il+BUnIO34a/xdvwd9uLv8W68F+/H+fg0rhzG/Rimro7D8Ug8Gs/CHrwap9msb/Me"
    "foCfYHloPSXr2c6ugTxfqrOezYYy/q+u5/06fki9dCqNZL9qKOvhSJuN5flbQ9frRH2szSbSX2C3zabS3vBkPBW/gadhj81mMn7EfvwnDuACLJ"
    "1Qc3nnC9f9KIFL4lK4VrguHolnYg/Owtnhep7uYekkWshx12R93BJH4Rgci3vg57DLZks5fsqT8XTssdnK5r9xNj6IffgsPo/9NfV8SCfVWt6/"
    "aml9XRxps42MYyh341l4Nl6IU/FqnIa34Oxa+r5yE0tnEyXvX7WVcdhjs63cFzbbyXOJ+kdYOo32Mh6P0PJo3B8PxC6bHWR7Efqem0J9aoT2Dz"
    "vxLuyN0N/dT7kvQvf3xwhtDyfwRXwJ/4Gv4ev4Dr6LH+ACXMjvSKcn8wyN6+h7eos6ur8tKR9N+cs4CU/EM1h+Jv6Oem8d/T05uGLBG1DLq9ej"
    "+eO6OBL3xn1xHHbheDwCJ+CReBQejRPxGPwu9uCv8Nd4D96LT+BT+Bz+GQfwLXwX38NFWDo9Oe/lI/W8VMSvRjIuwVMj9Xy9Qfk0ymdT7sGpOA"
    "3vYXkf27+JpTOV+sb1dX+a4Ob1df2WuB1uj+PwC9iNF+BF9WnPf2+vIf1IQ/UA7MbSWT4t2Uw9rYXWv9WCetupdJTlW3KcLXX+6E5L3s+wdB5y"
    "vzRupeVNcFPcCrfGUTY72RyPp+CpeDb2tNLn0krK0/BmnI634mz8Dd6Ov8NevA/vx0exD+fj0/gC9rfS+0o6Qzk/ia05n3gs9tjsLP0eXoPvYO"
    "kExafa8Bxqo+uXjNLyUlHqEFwa18fNo7Q9tY7S8UwU9Z2pj8GxUbr9Hja7yHnEq1h/DcutpT4Nr7fZVfoj/BgHO0PZz7Y67xmF27bV/ViKU9vq"
    "emks58VXqL+BA23Zbjtdv147bst2tG/KZ2NfO12+CEunLo5vjzvo8XsH4ji1SbPPBHkf28j+bVTvwz6bMcEBtTHPSLP/nPvmc73eaTa7SX9Nud"
    "ms239qs94X83EKPr9ZF7uEf8E3sUm37wRyX6RzP6Tr+l1xrM1Y6cexJ13nuvfiPHwG+9N1fs9kGPOstIsM3V4bHGWzp4yjMuh3sTtDz+8syj02"
    "n5Pt46Nsx0f5GcrPY3+Gjs+LKJcJ914yfsvkOHAcduEEPAq7M3U7Hpu9ZX6B+rPYb7OPzMtT7mTpfRmSpS6DQ3FlXANH4ia4KW6Do7L4jpClxz"
    "sKv5ql/XMSnkD963gy6ydn6fjYm6X7eZ3yAC7A5t96vjfm01/lq/fhQ/gRNg+1/U4u4HcK1GewKdT9CClkvqtQ5+fDcZ1CnX/vhDvjZ3A33B3H"
    "4mdxT9wL98auQp137vaYfuax2veY48bmifYzlZ7ocrWecD0ob/2E7w3UD6H+RTwOj8ev4+Qnuv3p+C38GBexvCmivRTRfxbp+YrGPfBInFSk/U"
    "kynorX4bQivT7fsd3deD8+iH34OD6Nz+CfsZ/t/oZ/xzfwQ/wEi/oGp8kcpmXUTXBTHI1jcDfcHcdhF07EHlyIjeME/6u4ow7BHXAnHGtT7pOl"
    "lKdSvhanUb8e+6h/bFPawRPKPcUc00/WK8Z6NvvL/CH2F9PlLxbT9R9RbnfQDLDRsLi6FY6y+byMeyh32Rwo3wexx2acXF/8KU6z+YLNHyjfj0"
    "9hU8Kx585uz+Yg2Y7NwbKdEuw3zsTZNofIuBWfxo+wKemYF+X6lVRH2Rwq4wk8BSfbHCb7T/k/cQpehFfgj/DHeCX+DG/A2/AXeAfeiXdhr83h"
    "Mo7BppRj4qUdhKhjQ9TDsBuPxx6bcr/NxfNwDt6GvdiUdswI+ZnS6tK4DC6LO+JOuAuOwc/g7jjWZoLsJ+XDsdumfEv22Bwl7YH6zTgb+22Otn"
    "kb38H3cCE2ZRx7b9nX0zJaXg9H2hwjz3vKu+NYm255PlLusSnftNNsvizjWcpzsQ8fx6asY14Jfv9y+P6lDsHlcVVcDYfjmrgj7oyjcXfcD7vw"
    "COy2OVb22+arst+Ue20mST+H/8L3sSnnmHHyu+XUXXCszfFynSiPx26br9l8k/IZ2GNzQvC7iMP3EPVanIGzsSnvmInB7wOcb5uvy32Avfg2Ls"
    "CmgmMmyf1agfsVd8WxNicH57XVr+G5eAlOxe6KTvD5Nbsi+2FzivQfOAtvwdl4G97N+vvxAXwDB7AJdUyy7Hco+21zqrQ3nGzzDZm/wdk237R5"
    "GPttTpPrhk0lx0yX50kl9WD8Fp6NPTbfknEd5UdwHvbZfFvmTXAAF2BT2TEzZH6wsroj7otdNmfK9xfssfmO7C++aDM4P49NFSf4NyJVqqjD8L"
    "PYY/Of0j/h+XgBXoiX4KV4Hf4UZ+Jsm7Ok3eMALsAmzDHvyn0bxn2LK+BQXBmH4Wa4OW6L2+EO+GncFUeH6XM0hvJelPfB/fAAHIddeBAejuPx"
    "aDwWJ+FJOBlPxx6bs+V84hS8CC/BS3Eq/hp/g7/Hu/F/8R68F+/Dh/BhfArn45/wRfwLNlUdO0ay7wdVOV78MvbYfE/uQ+zDZ/6ur+aY92X/q6"
    "m34/PYVHfMB3I9qnO+cQJ225T55UnYY/NDeV5jLz6IfTblveoyNjUcM0emWWuo6+CWOAr3wSbcMXOlnYQzrrE5T/pDXIRNTcfMl+dMTS0vg8vi"
    "8rgqroZr4HDcEXfCXXA07oNdOAGn2Vwgr9U4E5/GZ/Cv2NRyzELpP2qxPZspMh7C2TZl3t5rc5GMwyk3tZ3ge3a52lyP2trPjMdem4vlvR8HcA"
    "E2EY5ZIucngvEL7oQ7497YhSfhZJtLg/PV6uU4HWfgb7Cp45hUuS51GD/hsrgc7oS74mgcg7vh7rgvduEE7La5LDgfrR6HX8MT8FKcipfjFXgV"
    "TsOZONvmcpnvxX78Jw7YlL8HuvV3fV3HrJDrV5fzUc8xH0k/Wk9dBUfjbngkzrYp80I52GuzWnBemfaPTaRj/k/m+xrwOw3VzzXiPDVSp9v82O"
    "bzjdXzGnMe2jhmpdxXbVg/yjH/knFPB85rB3VhT+qfc8wquR9645ccs1qu30t4vBOcr+oygfGIzTUy74PdeAKejJNtfiLvt5R78UHss7lW5jdw"
    "AN/DZqJj1kn7nchx4wQ8Er+MX8Ez8CycimMnOeZT+XvJSXiyI1N5Zs1k2ofN9fL3mXgnPoHNFMd8Js+xKeoX8Hy8FKdhv80N0u/blKnBSzZlvu"
    "WyzU3Sf7BcgPL72CTreiZFlzu7iPaxSG0Wa339xfTb+DY2SxwjU4vLl3Fcy9Q/4sBWJzgPcWer+i5+hB/jImyy1Y5NmdeNzFE3yFE3xM1yGC9Q"
    "3h678BA8lOWH4bH4NZyco+fr0TZ+P9eRKVIzMZd6PAt78AKcilfjT3Barr7nb6TcHGbe4DA+ov4yT70jT30MH8cn8c/4CTZHdRzU+ijPP9wHu4"
    "7q8j9g41Pf8+Fj6ibHdL1meByegP+BP8Bz8CKcibdgc1znS3ofZz+Oa/nI47rcaPw+9V58AvvxHWx+VA//kfsfz8TmhHroCfUwvBavw2n4M7wB"
    "b8KbcQb+D96Cd+CdOBfvwj/gPbjUSeadTqrL4Qq4Gq6O6+C6uCuOxt1xLO6Fe+M+uD8ehAfjzafU6afUh/PVeflct9OOTO2bRWe0fM0ZdRpej7"
    "OxOct+n8UXdP7j/QvcF3glPoJvX9D2cRcbvxP8Thfi5zmPa+La+CncADfCjXELHGVT5mUn46U4FZuLjnxqMK0usjzuhmNxfxyHXTj1khP82/yt"
    "l2i/NmWKvAAXYfMLz53Ljkydm4LL+FfH/Eeeh7+yPDZX2J7NLXI6sR/fw0+w+Y16m/I94Df8O76Kr+EbOICLsPndMVul3f7OewbOx+YPx2TLc/"
    "8P7mecgBOxG0+9qu3iq6tq55q62zW2d13f50tc530RR+L6uAFuiBvhJrgpbobb4w64M+6Cu+JoHIOfxT1xH9wX98P98QD8PB6IXXgQHoJfxEPx"
    "cByPR+AEPBKPwqNxIh6D3fgl/Aoei1/F4/BE/Dp+E0/DM/BMPAu/i2djD16IU/AneD3eiDfhTJyFc3EA38ImoO2lZYD7E3+E0/BWnIO9+Hvsw8"
    "fwPWxusv5N9RVsbum4wbnFd4NbWl8Jx+BY3A+78GDsxknY3Fafuac+d099DQfwY2zuq8/d5/7GV3EAl3/A/j1Q98UunIDdeD5OxVtwNs7FXrwb"
    "+/BP2DxUxxew/QL1ZJyMZ2EP3of34wP4MD6PL+Cr+AYuxKZQvaKQ7wS4EMtXMRnf+j8vxvdudb3t6sjt6i156uw89cW/1IG/1InXWf+Bum4BNs"
    "WDHhBWnHkl9Tsd+D8s+YqbHGknj4rz1aticP+KmYr82Y7ag+UPbksEm736f8GKErg="
)


@functools.lru_cache(maxsize=1)
def script_table() -> np.ndarray:
    """int16 script index per code point (0..0x10FFFF); read-only."""
    pairs = np.frombuffer(zlib.decompress(base64.b64decode("".join(_RANGES))), dtype="<u4").reshape(-1, 2)
    starts = pairs[:, 0].astype(np.int64)
    lengths = np.diff(np.append(starts, 0x110000))
    table = np.repeat(pairs[:, 1].astype(np.int16), lengths)
    table.flags.writeable = False
    return table


@functools.lru_cache(maxsize=2)
def sentencepiece_scripts(inherited: int) -> np.ndarray:
    """int16 of shape ``(0x110000,)``: each code point's script as SentencePiece's trainers compare it
    (``IsValidSentencePiece``): Hiragana, Katakana and U+30FC count as Han, code points without a script are
    Common, and Inherited ones get the caller's marker ``inherited`` (a negative value: they take their
    neighbour's script). Read-only; one table per marker. Example: ``SCRIPT_NAMES[sentencepiece_scripts(-1)[0x3042]]``
    (HIRAGANA LETTER A) is ``"HANI"``."""
    names = {name: i for i, name in enumerate(SCRIPT_NAMES)}
    table = np.array(script_table(), dtype=np.int16)
    table[(table == names["HIRAGANA"]) | (table == names["KATAKANA"]) | (table == names["KATAKANAORHIRAGANA"])] = \
        names["HANI"]
    table[0x30FC] = names["HANI"]
    table[table == names["UNKNOWN"]] = names["COMMON"]
    table[table == names["INHERITED"]] = inherited
    table.flags.writeable = False
    return table
