"""A snapshot's dense vectors, in blocks of rows that later snapshots share.

A save changes one skill's vector, but a snapshot is immutable and several are alive at
once (the live one, the one compare and what-if keep, the one a running lint reads), so
each one owning the whole matrix costs the library's size in memory per snapshot (40 MB
at 26,000 skills). `DenseRows` holds the matrix as read-only blocks of `BLOCK_ROWS`
rows: a snapshot after an edit copies only the blocks of the rows that changed and
shares every other block with the snapshot it came from. Adds and removes move every
later row, so they keep the blocks before the first moved row and rebuild the rest.

Scores stay those of a full build, bit for bit, because the blocks are always the same
whichever way a snapshot was made: rows `[k * BLOCK_ROWS, (k + 1) * BLOCK_ROWS)` of the
library, and `@` is one matrix-vector product per block. (A product's value for a row
depends on where the row sits in the matrix it is computed over, so a layout of "old
matrix plus a few new rows" would not give a fresh build's floats.) `BLOCK_ROWS` is a
multiple of BLAS's row grouping, so these products also equal one product over the whole
matrix on the machines measured; the tests compare against fresh builds, not that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

BLOCK_ROWS = 1024  # 1.5 MB of float32 at 384 dimensions: what an edit copies


class DenseRows:
    """An [N, dim] matrix as read-only row blocks; `@`, indexing and `np.asarray` work as
    on the array it stands for."""

    __slots__ = ("_blocks", "dtype", "shape")

    def __init__(self, blocks: Sequence[np.ndarray], dim: int, dtype: np.dtype[Any]) -> None:
        self._blocks = tuple(blocks)
        self.shape = (sum(len(block) for block in self._blocks), dim)
        self.dtype = dtype

    @classmethod
    def from_array(cls, matrix: np.ndarray, *, copy: bool = True) -> DenseRows:
        """`matrix` in blocks: copies each block into its own array (so `matrix` can be
        freed), or, with `copy=False`, read-only views of it (a store that stays loaded)."""
        n, dim = matrix.shape
        blocks = []
        for start in range(0, n, BLOCK_ROWS):
            block = matrix[start : start + BLOCK_ROWS]
            block = np.array(block) if copy else block.view()
            block.flags.writeable = False
            blocks.append(block)
        return cls(blocks, dim, matrix.dtype)

    @classmethod
    def adopt(cls, blocks: Sequence[np.ndarray]) -> DenseRows:
        """Arrays already cut at `BLOCK_ROWS` rows (`embed_blocks_with_cache`), kept as
        they are, read-only."""
        if any(len(block) != BLOCK_ROWS for block in blocks[:-1]):
            raise ValueError(f"every block but the last must have {BLOCK_ROWS} rows")
        for block in blocks:
            block.flags.writeable = False
        return cls(blocks, blocks[0].shape[1], blocks[0].dtype)

    @classmethod
    def of(cls, vectors: DenseRows | np.ndarray) -> DenseRows:
        """`vectors` as blocks (an array is copied into them)."""
        if isinstance(vectors, DenseRows):
            return vectors
        return cls.from_array(np.asarray(vectors))

    @property
    def blocks(self) -> tuple[np.ndarray, ...]:
        return self._blocks

    @property
    def nbytes(self) -> int:
        return sum(block.nbytes for block in self._blocks)

    def __len__(self) -> int:
        return self.shape[0]

    def __matmul__(self, query: np.ndarray) -> np.ndarray:
        """Each row's product with `query`: one product per block, as every snapshot of
        the same rows computes it."""
        if not self._blocks:
            return np.zeros(0, dtype=np.result_type(self.dtype, query.dtype))
        return np.concatenate([block @ query for block in self._blocks])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The whole matrix, assembled (a new array: for the few readers that need it)."""
        if self._blocks:
            whole = np.concatenate(self._blocks)
        else:
            whole = np.zeros(self.shape, dtype=self.dtype)
        return whole if dtype is None else whole.astype(dtype, copy=False)

    def __getitem__(self, key: Any) -> np.ndarray:
        """A row (int) is a read-only view of its block; rows (a slice, an index or a mask
        array) are gathered into a new array."""
        if isinstance(key, (int, np.integer)):
            row = int(key)
            if row < 0:
                row += self.shape[0]
            if not 0 <= row < self.shape[0]:
                raise IndexError(f"row {key} out of range for {self.shape[0]} rows")
            block: np.ndarray = self._blocks[row // BLOCK_ROWS][row % BLOCK_ROWS]
            return block
        if isinstance(key, slice):
            rows = np.arange(self.shape[0])[key]
        else:
            rows = np.asarray(key)
            if rows.dtype == bool:
                rows = np.flatnonzero(rows)
            rows = np.where(rows < 0, rows + self.shape[0], rows).astype(np.int64)
        return self._gather(rows)

    def _gather(self, rows: np.ndarray) -> np.ndarray:
        out = np.empty((len(rows), self.shape[1]), dtype=self.dtype)
        which = rows // BLOCK_ROWS
        for block in np.unique(which).tolist():
            picked = which == block
            out[picked] = self._blocks[block][rows[picked] - block * BLOCK_ROWS]
        return out

    def replaced(self, rows: Sequence[int], values: np.ndarray) -> DenseRows:
        """These rows with new values: the blocks holding them are copied, every other
        block is this one's."""
        blocks = list(self._blocks)
        at = np.asarray(rows, dtype=np.int64)
        which = at // BLOCK_ROWS
        for index in np.unique(which).tolist():
            picked = which == index
            block = np.array(blocks[index])
            block[at[picked] - index * BLOCK_ROWS] = values[picked]
            block.flags.writeable = False
            blocks[index] = block
        return DenseRows(blocks, self.shape[1], self.dtype)

    def remapped(
        self, old_to_new: np.ndarray, n: int, fresh: Sequence[int], values: np.ndarray
    ) -> DenseRows:
        """`n` rows: old row i at `old_to_new[i]` (-1: gone), `values` at the positions
        `fresh`. Blocks wholly before the first row that moved or changed are shared; the
        rows from that block on are rebuilt into new blocks."""
        old_n = self.shape[0]
        common = min(old_n, n)
        same = old_to_new[:common] == np.arange(common)
        first = int(np.argmin(same)) if not same.all() else common
        if len(fresh):
            first = min(first, int(min(fresh)))
        kept = first // BLOCK_ROWS
        start = kept * BLOCK_ROWS
        tail = np.zeros((max(n - start, 0), self.shape[1]), dtype=self.dtype)
        moved = np.flatnonzero(old_to_new >= start)
        if len(moved):
            tail[old_to_new[moved] - start] = self._gather(moved)
        if len(fresh):
            tail[np.asarray(fresh, dtype=np.int64) - start] = values
        rebuilt = DenseRows.from_array(tail)
        return DenseRows(self._blocks[:kept] + rebuilt.blocks, self.shape[1], self.dtype)
