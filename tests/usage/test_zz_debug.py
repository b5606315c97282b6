import asyncio, uuid
from test_recorder import _records
from gateway.config import Settings
from gateway.stores import open_store
from gateway.usage.recorder import UsageRecorder

async def test_dbg(book, redis_server):
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    stores = [open_store(Settings(redis_url=redis_server.url)) for _ in range(2)]
    recorders = [UsageRecorder(s, flush_interval=0.01) for s in stores]
    async def dump():
        await asyncio.sleep(5)
        for t in asyncio.all_tasks():
            print("TASK", t.get_name()); t.print_stack(limit=8)
    d = asyncio.create_task(dump())
    for r in recorders:
        await r.start()
    print("started", flush=True)
    recs = _records(book, tenant, 40)
    print("built", flush=True)
    for i, rec in enumerate(recs):
        recorders[i % 2].add(rec)
    for r in recorders:
        print("stop", await r.stop(), flush=True)
