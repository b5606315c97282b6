import asyncio

from gateway.semantic.batching import collect


def test_takes_what_arrives_within_the_window_up_to_the_cap() -> None:
    async def main() -> tuple[list[int], list[int], list[int]]:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(5):
            queue.put_nowait(i)
        capped = await collect(queue, window=0.05, max_batch=3)
        rest = await collect(queue, window=0.01, max_batch=10)

        async def late() -> None:
            await asyncio.sleep(0.2)
            queue.put_nowait(99)

        queue.put_nowait(7)
        task = asyncio.create_task(late())
        alone = await collect(queue, window=0.02, max_batch=10)  # 99 comes after the window
        await task
        return capped, rest, alone

    capped, rest, alone = asyncio.run(main())
    assert capped == [0, 1, 2]
    assert rest == [3, 4]
    assert alone == [7]
